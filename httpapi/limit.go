package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// Expensive requests (lists, event streams' batches, dry-run plans,
// digests) are bounded per server and per caller, so that no token holder
// can starve the cluster: each in-flight one holds a page of objects and a
// core, and unbounded, 200 concurrent lists took a follower from 200 MB to
// 5 GB and made the leader miss heartbeats. A slot covers building the
// answer and sending it (a shared answer costs little to build but as much
// to send). Health, status, reads by id and writes are not limited, nor is
// a blocking query while it waits. A request waits up to the queue wait
// for a slot, then gets 429 tooManyRequests with Retry-After.

// Limit defaults; Config overrides them.
const (
	defaultQueueWait = 5 * time.Second
	// maxWaiting bounds the goroutines parked for a slot, per server; a
	// request beyond it is turned away at once.
	maxWaiting = 4096
)

// DefaultMaxExpensive is the per-server bound: one per core (at least 2).
// A slot is held while the answer is built and sent, so expensive work
// never has more goroutines runnable than there are cores: Raft's
// heartbeats and the writes keep their turn on the scheduler. With more,
// 2,000 clients kept the leader's run queue long enough to cost elections.
func DefaultMaxExpensive() int { return max(2, runtime.GOMAXPROCS(0)) }

// DefaultMaxExpensivePerCaller leaves most slots to other callers.
func DefaultMaxExpensivePerCaller() int { return max(1, DefaultMaxExpensive()/4) }

// writeTimeout bounds each write of an expensive answer: a slot is held
// while it is sent, and a client that stops reading must not keep it.
const writeTimeout = 10 * time.Second

// limiter hands out slots for expensive work.
type limiter struct {
	slots     chan struct{}
	perCaller int
	wait      time.Duration

	mu      sync.Mutex
	held    map[string]int // slots held (and waited for) per caller
	waiting int
	freed   chan struct{} // closed and replaced whenever a caller's slot is freed
}

func newLimiter(total, perCaller int, wait time.Duration) *limiter {
	return &limiter{
		slots: make(chan struct{}, total), perCaller: perCaller, wait: wait,
		held: map[string]int{}, freed: make(chan struct{}),
	}
}

// acquire takes a slot for caller, waiting up to the queue wait (forever
// when patient: a stream already answering). It returns the release.
func (l *limiter) acquire(ctx context.Context, caller string, patient bool) (func(), error) {
	var deadline <-chan time.Time
	if !patient {
		t := time.NewTimer(l.wait)
		defer t.Stop()
		deadline = t.C
	}
	if !l.queue(1) {
		return nil, tooMany("too many requests are waiting for this server; retry later")
	}
	defer l.queue(-1)
	if err := l.enter(ctx, caller, deadline); err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots; l.leave(caller) }, nil
	case <-deadline:
		l.leave(caller)
		return nil, tooMany("the server is busy with other expensive requests; retry later")
	case <-ctx.Done():
		l.leave(caller)
		return nil, ctx.Err()
	}
}

// queue counts a waiter in (+1) or out (-1); false when the queue is full.
func (l *limiter) queue(delta int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if delta > 0 && l.waiting >= maxWaiting {
		return false
	}
	l.waiting += delta
	return true
}

// enter counts caller in, waiting while it is at its own limit.
func (l *limiter) enter(ctx context.Context, caller string, deadline <-chan time.Time) error {
	l.mu.Lock()
	for l.held[caller] >= l.perCaller {
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-deadline:
			return tooMany("this caller already has %d expensive requests in flight; retry later", l.perCaller)
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.held[caller]++
	l.mu.Unlock()
	return nil
}

func (l *limiter) leave(caller string) {
	l.mu.Lock()
	if l.held[caller]--; l.held[caller] <= 0 {
		delete(l.held, caller)
	}
	close(l.freed)
	l.freed = make(chan struct{})
	l.mu.Unlock()
}

func tooMany(format string, args ...any) error {
	return &httpError{status: http.StatusTooManyRequests, code: api.CodeTooManyRequests, message: fmt.Sprintf(format, args...)}
}

// caller names who a request counts against: its ACL token, else its
// client address. A follower forwarding a request names the client in
// headerClient, trusted only on a forwarded request.
func caller(c echo.Context) string {
	if tok, ok := c.Get(tokenKey).(*fsm.ACLToken); ok {
		return "token " + tok.AccessorID
	}
	req := c.Request()
	if secret := requestSecret(req); secret != "" {
		return "secret " + HashSecret(secret)[:16]
	}
	if req.Header.Get(api.HeaderForwarded) != "" {
		if client := req.Header.Get(headerClient); client != "" {
			return "client " + client
		}
	}
	return "client " + clientIP(req)
}

// headerClient carries the client's address on a forwarded request.
const headerClient = "X-Amserver-Client"

func clientIP(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// limited runs fn holding a slot for c's caller, with each write of its
// answer bounded by writeTimeout.
func (s *Server) limited(c echo.Context, fn func() error) error {
	release, err := s.limits.acquire(c.Request().Context(), caller(c), false)
	if err != nil {
		return err
	}
	defer release()
	rc := http.NewResponseController(c.Response())
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	return fn()
}

// expensive bounds a whole request (a dry-run plan, a digest). It wraps
// the handler itself, so it runs after authorize has named the token.
func (s *Server) expensive(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error { return s.limited(c, func() error { return next(c) }) }
}
