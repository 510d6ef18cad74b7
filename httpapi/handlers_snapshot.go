package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// saveSnapshot streams a snapshot. Headers go out with the first byte, so
// a failure before it is a proper error answer; a failure after it aborts
// the connection, so the client cannot mistake a truncated file for a
// snapshot (the format's checksum would catch it too).
func (s *Server) saveSnapshot(c echo.Context) error {
	w := &lazyResponse{c: c, index: s.b.State().Index()}
	if err := s.b.SaveSnapshot(c.Request().Context(), w); err != nil {
		if !w.started {
			return err
		}
		panic(http.ErrAbortHandler)
	}
	w.start()
	return nil
}

type lazyResponse struct {
	c       echo.Context
	index   uint64
	started bool
}

func (w *lazyResponse) start() {
	if w.started {
		return
	}
	w.started = true
	resp := w.c.Response()
	resp.Header().Set(echo.HeaderContentType, echo.MIMEOctetStream)
	resp.Header().Set("Content-Disposition", `attachment; filename="amserver.snap"`)
	setIndex(w.c, w.index)
	resp.WriteHeader(http.StatusOK)
}

func (w *lazyResponse) Write(p []byte) (int, error) {
	w.start()
	return w.c.Response().Write(p)
}

// restoreSnapshot replaces the whole state with the uploaded snapshot.
func (s *Server) restoreSnapshot(c echo.Context) error {
	if err := s.b.RestoreSnapshot(c.Request().Context(), c.Request().Body); err != nil {
		return err
	}
	setIndex(c, s.b.State().Index())
	return c.NoContent(http.StatusNoContent)
}
