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
	// admit, when set, makes a slot rest after each use (admission.go).
	admit *admission

	mu      sync.Mutex
	callers map[string]*callerSlots
	waiting int
}

// callerSlots are one caller's share of the slots: a semaphore, so a slot
// the caller frees wakes one of its waiters, not all of them (a broadcast
// to hundreds of waiters of one token cost the leader a fifth of its CPU).
type callerSlots struct {
	sem  chan struct{}
	refs int // holders and waiters
}

func newLimiter(total, perCaller int, wait time.Duration) *limiter {
	return &limiter{
		slots: make(chan struct{}, total), perCaller: perCaller, wait: wait,
		callers: map[string]*callerSlots{},
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
	cs := l.join(caller)
	select {
	case cs.sem <- struct{}{}:
	case <-deadline:
		l.leave(caller, cs)
		return nil, tooMany("this caller already has %d expensive requests in flight; retry later", l.perCaller)
	case <-ctx.Done():
		l.leave(caller, cs)
		return nil, ctx.Err()
	}
	select {
	case l.slots <- struct{}{}:
		start := l.now()
		return func() { l.release(caller, cs, l.now().Sub(start)) }, nil
	case <-deadline:
		<-cs.sem
		l.leave(caller, cs)
		return nil, tooMany("the server is busy with other expensive requests; retry later")
	case <-ctx.Done():
		<-cs.sem
		l.leave(caller, cs)
		return nil, ctx.Err()
	}
}

// release gives back a slot held for busy: at once, or after the rest the
// admission controller asks for.
func (l *limiter) release(caller string, cs *callerSlots, busy time.Duration) {
	<-cs.sem
	l.leave(caller, cs)
	if rest := l.admit.cooldown(busy); rest > 0 {
		time.AfterFunc(rest, func() { <-l.slots })
		return
	}
	<-l.slots
}

// now is the admission controller's clock (tests move it), else the time.
func (l *limiter) now() time.Time {
	if l.admit != nil {
		return l.admit.now()
	}
	return time.Now()
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

// join counts caller's request in and returns its semaphore.
func (l *limiter) join(caller string) *callerSlots {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.callers[caller]
	if cs == nil {
		cs = &callerSlots{sem: make(chan struct{}, l.perCaller)}
		l.callers[caller] = cs
	}
	cs.refs++
	return cs
}

// leave counts caller's request out, forgetting a caller with none left.
func (l *limiter) leave(caller string, cs *callerSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cs.refs--; cs.refs <= 0 {
		delete(l.callers, caller)
	}
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
	c.Response().Writer = yieldingWriter(c.Response().Writer)
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
