package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

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

// shutdown stops serving in an order that drops no request a client sent.
// Answers say Connection: close (Drain); the listener closes, so a client's
// next dial is refused (never sent); the connections already accepted
// deliver their request and get its answer; only then does
// http.Server.Shutdown close the idle kept-alive connections and wait for
// the rest. (Once Shutdown has begun, Go's server drops a request it reads
// on any connection without an answer, a brand-new one included, where no
// client may safely send it again.)
func (s *Server) shutdown(srv *http.Server, l net.Listener, conns *connTracker) error {
	s.Drain()
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	_ = l.Close() // a failure leaves it to Shutdown, which closes it too
	conns.settle(ctx)
	err := srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, srv.Close())
	}
	return err
}

// connTracker knows the server's connections that are new (a request on
// its way) or active (a request being served).
type connTracker struct {
	mu   sync.Mutex
	busy map[net.Conn]struct{}
}

func newConnTracker() *connTracker { return &connTracker{busy: map[net.Conn]struct{}{}} }

// track is the http.Server's ConnState hook.
func (t *connTracker) track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st == http.StateNew || st == http.StateActive {
		t.busy[c] = struct{}{}
	} else {
		delete(t.busy, c)
	}
}

func (t *connTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.busy)
}

// settle waits until no connection is new or active, or ctx ends.
func (t *connTracker) settle(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for t.count() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// onceCloseListener closes its listener once: shutdown closes it before
// http.Server.Shutdown does again.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}
