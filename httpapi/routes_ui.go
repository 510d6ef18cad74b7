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
	serve := echo.WrapHandler(http.StripPrefix("/ui", ui))
	toUI := func(c echo.Context) error { return c.Redirect(http.StatusFound, uiPrefix) }
	// Public: a browser loading the page sends no header; the pages then
	// send the token on every API call.
	s.handle(http.MethodGet, "/", toUI, public)
	s.handle(http.MethodGet, "/ui", toUI, public)
	s.handle(http.MethodGet, uiPrefix, serve, public)
	s.handle(http.MethodGet, uiPrefix+":file", serve, public)
}
