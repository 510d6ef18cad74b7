package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// uiPrefix is where the web UI is served.
const uiPrefix = "/ui/"

// uiRoutes serves the static web UI at /ui/ and sends / and /ui there. The
// UI is the same on every server, so its routes are local: never forwarded
// to the leader and never subject to read consistency. Its assets are flat
// (/ui/app.js), so one path parameter covers them.
func (s *Server) uiRoutes(ui http.Handler) {
	e := s.echo
	serve := echo.WrapHandler(http.StripPrefix("/ui", ui))
	toUI := func(c echo.Context) error { return c.Redirect(http.StatusFound, uiPrefix) }
	e.GET("/", toUI)
	e.GET("/ui", toUI)
	e.GET(uiPrefix, serve)
	e.GET(uiPrefix+":file", serve)
}
