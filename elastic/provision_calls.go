package elastic

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/backoff"
)

// Config tunes the calls to provisioners.
type Config struct {
	// Policy is what the operator allows to be called.
	Policy Policy
	// CallTimeout bounds one provisioner call (default 2 m).
	CallTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between failed calls
	// (defaults 1 s and 1 m).
	RetryMin, RetryMax time.Duration
	// MaxAttempts is how often a call is tried before it is given up and
	// reported (Failed); default 8, about three minutes with the defaults.
	MaxAttempts int
	// HTTPClient carries webhook calls; the default one enforces Policy at
	// every dial. Tests may replace it.
	HTTPClient *http.Client
}

func (c *Config) setDefaults() {
	if c.CallTimeout <= 0 {
		c.CallTimeout = 2 * time.Minute
	}
	if c.RetryMin <= 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(time.Minute, c.RetryMin)
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 8
	}
	if c.HTTPClient == nil {
		c.HTTPClient = c.Policy.client(c.CallTimeout)
	}
}

// Calls runs provisioner calls for the leader's elastic duty, each on its
// own goroutine with a timeout per attempt and backoff between attempts, so
// a provisioner that hangs or fails never blocks the leader's loops or
// another pool. At most callsPerPool run at once per pool. Calls live for
// one leadership term: what they achieved is either in the replicated state
// (a registered node) or repeated by the next leader (calls are idempotent).
type Calls struct {
	ctx      context.Context
	logger   *slog.Logger
	cfg      Config
	kick     chan struct{}
	mu       sync.Mutex
	running  map[string]bool
	done     map[string]time.Time // call key → when it succeeded
	failures map[string]string    // call key → last error, for status logs
	gaveUp   map[string]string    // call key → the error it ended on
	sems     map[string]chan struct{}
	wg       sync.WaitGroup
}

const callsPerPool = 4

// NewCalls starts a term's calls; they end with ctx.
func NewCalls(ctx context.Context, logger *slog.Logger, cfg Config) *Calls {
	cfg.setDefaults()
	return &Calls{
		ctx: ctx, logger: logger, cfg: cfg, kick: make(chan struct{}, 1),
		running: map[string]bool{}, done: map[string]time.Time{}, failures: map[string]string{},
		gaveUp: map[string]string{}, sems: map[string]chan struct{}{},
	}
}

func callKey(op, id string) string { return op + "/" + id }

// Create asks sp's pool provisioner p for sp's node, with the servers'
// gossip (join) and HTTP addresses the new worker needs. wanted is asked
// before every attempt: a call whose spawn moved on stops.
func (c *Calls) Create(sp *fsm.Spawn, p *fsm.Provisioner, join, servers []string, wanted func() bool) {
	if prov := newProvisioner(p, c.cfg.HTTPClient, c.cfg.Policy); prov != nil {
		c.start(sp.Pool, prov, provisionRequest(ProvisionCreate, sp, join, servers), wanted)
	}
}

// Delete gives sp's node back through p.
func (c *Calls) Delete(sp *fsm.Spawn, p *fsm.Provisioner, wanted func() bool) {
	if prov := newProvisioner(p, c.cfg.HTTPClient, c.cfg.Policy); prov != nil {
		c.start(sp.Pool, prov, provisionRequest(ProvisionDelete, sp, nil, nil), wanted)
	}
}

// Deleted returns when the delete call for spawn id succeeded in this
// term, if it did.
func (c *Calls) Deleted(id string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.done[callKey(ProvisionDelete, id)]
	return at, ok
}

// Failed returns why spawn id's create ("create") or delete ("delete")
// call was given up after MaxAttempts in this term, if it was.
func (c *Calls) Failed(op, id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	why, ok := c.gaveUp[callKey(op, id)]
	return why, ok
}

// Kick receives a value after a call succeeded: the duty looks again.
func (c *Calls) Kick() <-chan struct{} { return c.kick }

// start runs the call unless it runs already or succeeded in this term.
func (c *Calls) start(pool string, p Provisioner, req *ProvisionRequest, wanted func() bool) {
	key := callKey(req.Op, req.RequestID)
	c.mu.Lock()
	if _, failed := c.gaveUp[key]; c.running[key] || !c.done[key].IsZero() || failed {
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
		ok, gaveUp := c.retry(sem, p, req, wanted)
		c.mu.Lock()
		delete(c.running, key)
		if ok {
			c.done[key] = time.Now()
			delete(c.failures, key)
		}
		if gaveUp {
			c.gaveUp[key] = c.failures[key]
		}
		c.mu.Unlock()
		if ok || gaveUp {
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	}()
}

// retry makes the call until it succeeds (ok), MaxAttempts fail (gaveUp),
// the spawn moves on or the term ends.
func (c *Calls) retry(sem chan struct{}, p Provisioner, req *ProvisionRequest, wanted func() bool) (ok, gaveUp bool) {
	b := backoff.New(c.cfg.RetryMin, c.cfg.RetryMax)
	for attempt := 1; c.ctx.Err() == nil; attempt++ {
		if !wanted() {
			return false, false
		}
		err := c.attempt(sem, p, req)
		if err == nil {
			c.logger.Info("provisioner call succeeded", "op", req.Op, "request", req.RequestID, "node", req.NodeID, "attempt", attempt)
			return true, false
		}
		if c.ctx.Err() != nil {
			return false, false
		}
		c.mu.Lock()
		c.failures[callKey(req.Op, req.RequestID)] = err.Error()
		c.mu.Unlock()
		if attempt >= c.cfg.MaxAttempts {
			c.logger.Warn("provisioner call given up", "op", req.Op, "request", req.RequestID, "node", req.NodeID,
				"attempts", attempt, "err", err)
			return false, true
		}
		c.logger.Warn("provisioner call failed; retrying", "op", req.Op, "request", req.RequestID, "node", req.NodeID,
			"attempt", attempt, "err", err)
		if errors.Is(err, errPermanent) {
			b.Saturate()
		}
		b.Wait(c.ctx)
	}
	return false, false
}

// attempt makes one call, holding one of the pool's call slots.
func (c *Calls) attempt(sem chan struct{}, p Provisioner, req *ProvisionRequest) error {
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

// Forget drops what is known of calls for spawns no longer in the state.
func (c *Calls) Forget(keep func(id string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.done {
		if _, id, _ := strings.Cut(key, "/"); !keep(id) {
			delete(c.done, key)
		}
	}
	for _, m := range []map[string]string{c.failures, c.gaveUp} {
		for key := range m {
			if _, id, _ := strings.Cut(key, "/"); !keep(id) {
				delete(m, key)
			}
		}
	}
}

// Wait waits for every call to end (they watch the term's context).
func (c *Calls) Wait() { c.wg.Wait() }
