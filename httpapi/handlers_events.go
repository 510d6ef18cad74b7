package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// streamEvents streams events with an index above ?index= as NDJSON, then
// every new one as it is applied, until the client goes away or the server
// stops. All events of one raft entry commit together and each read takes
// every event past the cursor, so a line never splits an entry.
func (s *Server) streamEvents(c echo.Context) error {
	cursor, _, err := uintParam(c, "index")
	if err != nil {
		return err
	}
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson")
	h.Set("Cache-Control", "no-cache")
	setIndex(c, s.b.State().Index(tableEvents))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	ctx := c.Request().Context()
	for {
		watch := s.b.WatchCh()
		next, err := s.writeEvents(w, cursor)
		if err != nil {
			return nil // the client went away; nothing is left to tell it
		}
		if next != cursor {
			cursor = next
			_ = rc.Flush()
		}
		select {
		case <-watch:
		case <-keepAlive.C:
			if _, err := w.Write([]byte("\n")); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-ctx.Done():
			return nil
		case <-s.stopping:
			return nil
		}
	}
}

// writeEvents writes every event after cursor and returns the new cursor.
func (s *Server) writeEvents(w *echo.Response, cursor uint64) (uint64, error) {
	if cursor == math.MaxUint64 {
		return cursor, nil // State.Events(cursor) would wrap to 0 and replay everything
	}
	for _, e := range s.b.State().Events(cursor, 0) {
		line, err := json.Marshal(eventToAPI(e))
		if err != nil {
			return cursor, fmt.Errorf("encode event %d: %w", e.Index, err)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return cursor, err
		}
		cursor = e.Index
	}
	return cursor, nil
}
