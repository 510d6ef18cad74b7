package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// eventPage bounds the events one read of the log takes: a stream that
// replays from an old index sends the log a page at a time and never holds
// more of it.
const eventPage = 256

// streamEvents streams events as NDJSON until the client goes away or the
// server stops. Without ?index it starts at the current index (only new
// events); with ?index=N it first replays the events after N, a page at a
// time (replaying the whole log at once for each of 2,000 streams cost the
// leader its elections). Every batch a stream sends, replayed or new,
// holds one of the expensive-request slots while it is read and sent, so a
// write that wakes thousands of streams wakes them a few at a time. Each
// event is encoded once for all streams (eventLines). A page never splits
// the events of one raft entry.
func (s *Server) streamEvents(c echo.Context) error {
	cursor, replay, err := uintParam(c, "index")
	if err != nil {
		return err
	}
	if !replay {
		cursor = s.b.State().Index(tableEvents)
	}
	ctx := c.Request().Context()
	// The first slot is claimed before answering, so a busy server can
	// still say 429 instead of a stream that stalls.
	release, err := s.limits.acquire(ctx, caller(c), false)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Writer = yieldingWriter(w.Writer)
	h := w.Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson")
	h.Set("Cache-Control", "no-cache")
	setIndex(c, s.b.State().Index(tableEvents))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	for {
		batch, err := s.sendEvents(c, rc, cursor)
		release()
		if err != nil {
			return nil // the client went away (or stopped reading); nothing is left to tell it
		}
		cursor = batch.next
		// A full page means more may follow at once: read on without
		// waiting (replay); otherwise wait for a change.
		if !batch.full && !s.awaitEvents(ctx, w, rc, keepAlive.C, batch.index) {
			return nil
		}
		if release, err = s.limits.acquire(ctx, caller(c), true); err != nil {
			return nil // the client left, or the server stops
		}
	}
}

// eventBatch is what one read of the log sent: next is the cursor after
// it, full says the page limit cut it, index is the events table's index
// it was read at.
type eventBatch struct {
	next  uint64
	full  bool
	index uint64
}

// sendEvents sends the page after cursor, each event's line encoded once
// for every stream (eventLines), each write bounded by writeTimeout.
func (s *Server) sendEvents(c echo.Context, rc *http.ResponseController, cursor uint64) (eventBatch, error) {
	if err := c.Request().Context().Err(); err != nil {
		return eventBatch{}, err
	}
	st := s.b.State()
	index := st.Index(tableEvents)
	events := st.EventsPage(cursor, eventPage)
	lines, err := s.eventLines.lines(st, events)
	if err != nil {
		return eventBatch{}, err
	}
	next := cursor
	if len(events) > 0 {
		next = events[len(events)-1].Index
	}
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	for _, line := range lines {
		if _, err := c.Response().Write(line); err != nil {
			return eventBatch{}, err
		}
	}
	if err := rc.Flush(); err != nil {
		return eventBatch{}, err
	}
	_ = rc.SetWriteDeadline(time.Time{})
	return eventBatch{next: next, full: len(st.EventsPage(next, 1)) > 0, index: index}, nil
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
			_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := w.Write([]byte("\n")); err != nil {
				return false
			}
			_ = rc.Flush()
			_ = rc.SetWriteDeadline(time.Time{})
		case <-ctx.Done():
			return false
		case <-s.stopping:
			return false
		}
	}
}
