package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
)

// crossOrigin recognizes a browser's write on behalf of another site. A
// browser sends a cross-origin POST with a text/plain or form body without
// asking first (no CORS preflight), and this API reads any body as JSON: on
// a cluster without ACLs, any web page its operator opened could submit a
// bundle that runs a command on a worker. Browsers mark such requests
// (Sec-Fetch-Site, Origin); the CLI, the Go client and curl send neither.
var crossOrigin = http.NewCrossOriginProtection()

// refuseCrossOrigin answers 403 to a browser's cross-origin write. The
// server a follower forwards to skips it: the follower checked, and its
// request keeps the browser's Origin, which names the follower's host.
func (s *Server) refuseCrossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Header.Get(api.HeaderForwarded) == "" {
			if err := crossOrigin.Check(req); err != nil {
				return forbidden("%s %s refused: a web page of another origin cannot write to this API (%v)",
					req.Method, req.URL.Path, err)
			}
		}
		return next(c)
	}
}
