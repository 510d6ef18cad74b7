package httpapi

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/fsm"
)

// Blocking query bounds (DESIGN §5).
const (
	defaultWait = 30 * time.Second
	maxWait     = 5 * time.Minute
)

// Table names of fsm's state store that reads depend on; a test checks
// each against fsm.Tables.
const (
	tableNodes       = "nodes"
	tablePools       = "pools"
	tableBundles     = "bundles"
	tableAssignments = "assignments"
	tableServices    = "services"
	tableEvents      = "events"
	tableKeyring     = "keyring"
)

// blockOptions are a read's ?index= and ?wait=.
type blockOptions struct {
	index uint64
	wait  time.Duration
}

func parseBlock(c echo.Context) (blockOptions, error) {
	var o blockOptions
	idx, _, err := uintParam(c, "index")
	if err != nil {
		return o, err
	}
	o.index, o.wait = idx, defaultWait
	if v := c.QueryParam("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return o, badRequest("query parameter wait=%q is not a duration such as 30s", v)
		}
		o.wait = min(d, maxWait)
	}
	return o, nil
}

// readFunc builds a read's answer from one consistent state view.
type readFunc func(st *fsm.State) (any, error)

// blockingRead answers a read, blocking first when ?index=N asks for a
// result newer than N: it waits for the tables' index to pass N (or to move
// at all, as after a restore to an older snapshot), or for the wait to end,
// then answers from a fresh view. The index header never goes below N, so a
// client passing it back never sees time run backwards.
func (s *Server) blockingRead(c echo.Context, fn readFunc, tables ...string) error {
	opts, err := parseBlock(c)
	if err != nil {
		return err
	}
	var timeout <-chan time.Time
	if opts.index > 0 {
		// Jitter spreads the wake-ups of many watchers started together.
		t := time.NewTimer(opts.wait + rand.N(opts.wait/16+1))
		defer t.Stop()
		timeout = t.C
	}
	ctx := c.Request().Context()
	var start uint64
	for first := true; ; first = false {
		watch := s.b.WatchCh() // before the view, so no change slips between them
		st := s.b.State()
		idx := max(st.Index(tables...), 1)
		if first {
			start = idx
		}
		if opts.index == 0 || idx > opts.index || idx != start {
			return s.answerRead(c, st, fn, max(idx, opts.index))
		}
		select {
		case <-watch:
		case <-timeout:
			st = s.b.State()
			return s.answerRead(c, st, fn, max(st.Index(tables...), opts.index))
		case <-s.stopping:
			return s.answerRead(c, st, fn, max(idx, opts.index))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) answerRead(c echo.Context, st *fsm.State, fn readFunc, index uint64) error {
	body, err := fn(st)
	if err != nil {
		return err
	}
	setIndex(c, index)
	return c.JSON(http.StatusOK, body)
}
