package httpapi

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
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

// blockingRead answers a cheap read (one object by id): see read.
func (s *Server) blockingRead(c echo.Context, fn readFunc, tables ...string) error {
	return s.read(c, false, fn, tables...)
}

// expensiveRead answers a read whose building costs a page of objects (a
// list): building it takes one of the limited slots (limit.go); waiting
// for a change and sending a shared answer do not.
func (s *Server) expensiveRead(c echo.Context, fn readFunc, tables ...string) error {
	return s.read(c, true, fn, tables...)
}

// read answers a read, blocking first when ?index=N asks for a result newer
// than N: it waits for the tables' index to pass N (or to move at all, as
// after a restore to an older snapshot), or for the wait to end, then
// answers from a fresh view. The index header never goes below N, so a
// client passing it back never sees time run backwards.
func (s *Server) read(c echo.Context, expensive bool, fn readFunc, tables ...string) error {
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
			return s.answerRead(c, st, fn, max(idx, opts.index), expensive, tables)
		}
		select {
		case <-watch:
		case <-timeout:
			st = s.b.State()
			return s.answerRead(c, st, fn, max(st.Index(tables...), opts.index), expensive, tables)
		case <-s.stopping:
			return s.answerRead(c, st, fn, max(idx, opts.index), expensive, tables)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// answerRead builds (or shares) the answer from st and sends it. Requests
// for the same thing at the same index share one encoding (shared.go); an
// expensive one holds a slot (limit.go) while it builds and sends it.
func (s *Server) answerRead(c echo.Context, st *fsm.State, fn readFunc, index uint64, expensive bool, tables []string) error {
	if expensive {
		return s.limited(c, func() error { return s.sendRead(c, st, fn, index, tables) })
	}
	return s.sendRead(c, st, fn, index, tables)
}

func (s *Server) sendRead(c echo.Context, st *fsm.State, fn readFunc, index uint64, tables []string) error {
	ctx := c.Request().Context()
	build := func() (answer, error) {
		if err := ctx.Err(); err != nil {
			return answer{}, err // the client left while this waited
		}
		v, err := fn(st)
		if err != nil {
			return answer{}, err
		}
		return encodeAnswer(v)
	}
	ans, done, err := s.shared.get(ctx, shareKey(c), st.Index(tables...), build)
	if err != nil {
		return err
	}
	defer done() // the body may go back to its pool once written
	setIndex(c, index)
	if ans.next != "" {
		c.Response().Header().Set(api.HeaderNextToken, ans.next)
	}
	return c.JSONBlob(http.StatusOK, ans.body)
}
