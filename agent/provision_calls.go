package agent

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/internal/backoff"
)

// provisionCalls runs provisioner calls for the elastic duty, each on its
// own goroutine with a timeout per attempt and backoff between attempts, so
// a provisioner that hangs or fails never blocks the leader's loops or
// another pool. At most callsPerPool run at once per pool. Calls live for
// one leadership term: what they achieved is either in the replicated state
// (a registered node) or repeated by the next leader (calls are idempotent).
type provisionCalls struct {
	ctx      context.Context
	logger   *slog.Logger
	cfg      ElasticConfig
	kick     chan struct{}
	mu       sync.Mutex
	running  map[string]bool
	done     map[string]time.Time // call key → when it succeeded
	failures map[string]string    // call key → last error, for status logs
	sems     map[string]chan struct{}
	wg       sync.WaitGroup
}

const callsPerPool = 4

func newProvisionCalls(ctx context.Context, logger *slog.Logger, cfg ElasticConfig) *provisionCalls {
	return &provisionCalls{
		ctx: ctx, logger: logger, cfg: cfg, kick: make(chan struct{}, 1),
		running: map[string]bool{}, done: map[string]time.Time{}, failures: map[string]string{},
		sems: map[string]chan struct{}{},
	}
}

func callKey(op, id string) string { return op + "/" + id }

// succeeded returns when the call succeeded in this term, if it did.
func (c *provisionCalls) succeeded(op, id string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.done[callKey(op, id)]
	return at, ok
}

// start runs the call unless it runs already or succeeded in this term.
// wanted is asked before every attempt: a call whose spawn moved on stops.
func (c *provisionCalls) start(pool string, p Provisioner, req *ProvisionRequest, wanted func() bool) {
	key := callKey(req.Op, req.RequestID)
	c.mu.Lock()
	if c.running[key] || !c.done[key].IsZero() {
		c.mu.Unlock()
		return
	}
	c.running[key] = true
	sem := c.sems[pool]
	if sem == nil {
		sem = make(chan struct{}, callsPerPool)
		c.sems[pool] = sem
	}
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ok := c.retry(sem, p, req, wanted)
		c.mu.Lock()
		delete(c.running, key)
		if ok {
			c.done[key] = time.Now()
			delete(c.failures, key)
		}
		c.mu.Unlock()
		if ok {
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	}()
}

func (c *provisionCalls) retry(sem chan struct{}, p Provisioner, req *ProvisionRequest, wanted func() bool) bool {
	b := backoff.New(c.cfg.RetryMin, c.cfg.RetryMax)
	for attempt := 1; c.ctx.Err() == nil; attempt++ {
		if !wanted() {
			return false
		}
		err := c.attempt(sem, p, req)
		if err == nil {
			c.logger.Info("provisioner call succeeded", "op", req.Op, "request", req.RequestID, "node", req.NodeID, "attempt", attempt)
			return true
		}
		if c.ctx.Err() != nil {
			return false
		}
		c.logger.Warn("provisioner call failed; retrying", "op", req.Op, "request", req.RequestID, "node", req.NodeID,
			"attempt", attempt, "err", err)
		c.mu.Lock()
		c.failures[callKey(req.Op, req.RequestID)] = err.Error()
		c.mu.Unlock()
		if errors.Is(err, errPermanent) {
			b.Saturate()
		}
		b.Wait(c.ctx)
	}
	return false
}

// attempt makes one call, holding one of the pool's call slots.
func (c *provisionCalls) attempt(sem chan struct{}, p Provisioner, req *ProvisionRequest) error {
	select {
	case sem <- struct{}{}:
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
	defer func() { <-sem }()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallTimeout)
	defer cancel()
	if req.Op == ProvisionDelete {
		return p.Delete(ctx, req)
	}
	return p.Create(ctx, req)
}

// forget drops what is known of calls for spawns no longer in the state.
func (c *provisionCalls) forget(keep func(id string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.done {
		if _, id, _ := strings.Cut(key, "/"); !keep(id) {
			delete(c.done, key)
		}
	}
	for key := range c.failures {
		if _, id, _ := strings.Cut(key, "/"); !keep(id) {
			delete(c.failures, key)
		}
	}
}

// wait waits for every call to end (they watch the term's context).
func (c *provisionCalls) wait() { c.wg.Wait() }
