package httpapi

import "github.com/labstack/echo/v4"

// Drain tells clients this server is about to stop, while it still
// serves: every answer from now on carries Connection: close, so each
// client's next request opens a fresh connection (refused once the
// listener closes, which proves it was never sent) instead of going into a
// kept-alive one that graceful shutdown may close under it. Unlike
// http.Server.SetKeepAlivesEnabled(false) it does not close the idle
// connections at once: that close is the race itself, and after the drain
// the shutdown finds fewer connections idle that a client is about to use.
func (s *Server) Drain() { s.draining.Store(true) }

// closeWhenDraining adds Connection: close to every answer written once
// Drain was called, a forwarded one included (the relay drops the
// leader's connection headers before writing).
func (s *Server) closeWhenDraining(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Before(func() {
			if s.draining.Load() {
				res.Header().Set(echo.HeaderConnection, "close")
			}
		})
		return next(c)
	}
}
