package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/fsm"
)

// eventPage bounds the events one read of the log takes: a stream that
// replays from an old index sends the log a page at a time and never holds
// more of it.
const eventPage = 256

// streamEvents streams events as NDJSON until the client goes away or the
// server stops. Without ?index it starts at the current index (only new
// events); with ?index=N it first replays the events after N, a page at a
// time, each page taking one of the expensive-request slots (replaying the
// whole log for every one of 2,000 streams cost the leader its
// elections). Streams at the same position share one encoding of what
// follows it, so a write does not cost one encoding per stream. A page
// never splits the events of one raft entry.
func (s *Server) streamEvents(c echo.Context) error {
	cursor, replay, err := uintParam(c, "index")
	if err != nil {
		return err
	}
	if !replay {
		cursor = s.b.State().Index(tableEvents)
	}
	ctx := c.Request().Context()
	// The first page is claimed before answering, so a busy server can
	// still say 429 instead of a stream that stalls.
	first, err := s.eventBatch(c, cursor, replay, false)
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
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	batch := first
	for {
		if len(batch.body) > 0 {
			if _, err := w.Write(batch.body); err != nil {
				return nil // the client went away; nothing is left to tell it
			}
			cursor, _ = strconv.ParseUint(batch.next, 10, 64)
		}
		_ = rc.Flush()
		// A full page means more may follow at once: read on without
		// waiting (replay); otherwise wait for a change.
		if !batch.full {
			if !s.awaitEvents(ctx, w, rc, keepAlive.C, batch.index) {
				return nil
			}
		}
		if batch, err = s.eventBatch(c, cursor, batch.full, true); err != nil {
			return nil // the client left, or the server stops
		}
	}
}

// eventAnswer is one batch of encoded event lines: next is the cursor
// after them, full says the page limit cut it, index is the events
// table's index it was read at.
type eventAnswer struct {
	answer
	full  bool
	index uint64
}

// awaitEvents waits until the events table moves past index (new events,
// or old ones pruned), writing keep-alive lines meanwhile; false when the
// stream should end.
func (s *Server) awaitEvents(ctx context.Context, w *echo.Response, rc *http.ResponseController, tick <-chan time.Time, index uint64) bool {
	for {
		watch := s.b.WatchCh()
		if s.b.State().Index(tableEvents) != index {
			return true
		}
		select {
		case <-watch:
		case <-tick:
			if _, err := w.Write([]byte("\n")); err != nil {
				return false
			}
			_ = rc.Flush()
		case <-ctx.Done():
			return false
		case <-s.stopping:
			return false
		}
	}
}

// eventBatch reads and encodes the page after cursor, shared with every
// stream at the same position. A replaying stream takes a slot for it
// (patient once its answer is under way: it waits rather than fail).
func (s *Server) eventBatch(c echo.Context, cursor uint64, replaying, patient bool) (eventAnswer, error) {
	st := s.b.State()
	compute := func() (answer, error) { return encodeEvents(st, cursor) }
	if replaying && st.Index(tableEvents) > cursor {
		compute = func() (answer, error) {
			release, err := s.limits.acquire(c.Request().Context(), caller(c), patient)
			if err != nil {
				return answer{}, err
			}
			defer release()
			return encodeEvents(st, cursor)
		}
	}
	key := "events after " + strconv.FormatUint(cursor, 10)
	a, err := s.shared.get(c.Request().Context(), key, st.Index(tableEvents), compute)
	if err != nil {
		return eventAnswer{}, err
	}
	next, _ := strconv.ParseUint(a.next, 10, 64)
	full := a.next != "" && len(st.EventsPage(next, 1)) > 0
	return eventAnswer{answer: a, full: full, index: st.Index(tableEvents)}, nil
}

// encodeEvents encodes the page of events after cursor as NDJSON lines;
// next is the cursor after them (cursor itself when there are none).
func encodeEvents(st *fsm.State, cursor uint64) (answer, error) {
	var buf []byte
	next := cursor
	for _, e := range st.EventsPage(cursor, eventPage) {
		line, err := json.Marshal(eventToAPI(e))
		if err != nil {
			return answer{}, fmt.Errorf("encode event %d: %w", e.Index, err)
		}
		buf = append(append(buf, line...), '\n')
		next = e.Index
	}
	return answer{body: buf, next: strconv.FormatUint(next, 10)}, nil
}
