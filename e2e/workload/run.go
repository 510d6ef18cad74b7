package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
)

// Op mix, in percent; creates take the rest.
const (
	pctRead  = 40
	pctWrite = 15
	pctCAS   = 25
)

// valueStride separates the written values of two processes, so every
// written value in a history is unique (and never the initial 0).
const valueStride = 1_000_000_000

// Run runs cfg.Clients client processes until ctx ends, recording every
// request in h. Requests in flight when ctx ends finish under their own
// timeout, so their outcome is known more often. It returns nil when ctx
// ended normally, or an error for a bad configuration.
func Run(ctx context.Context, cfg Config, h *History) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	cls, err := cfg.clients()
	if err != nil {
		return err
	}
	var creates atomic.Int64
	var wg sync.WaitGroup
	for p := range cfg.Clients {
		cl := &client{
			cfg: cfg, h: h, srv: cls[p%len(cls)], process: p, server: cfg.Servers[p%len(cfg.Servers)],
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed+int64(p)), 0)), creates: &creates,
		}
		wg.Go(func() { cl.loop(ctx) })
	}
	wg.Wait()
	return nil
}

// client is one sequential process: at most one request in flight.
type client struct {
	cfg     Config
	h       *History
	srv     *api.Client
	process int
	server  string
	rng     *rand.Rand
	creates *atomic.Int64 // creates attempted by all processes
}

func (c *client) loop(ctx context.Context) {
	for ctx.Err() == nil {
		c.step(ctx)
		if c.cfg.Think > 0 {
			t := time.NewTimer(c.cfg.Think)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// step runs one operation of the mix. Once the create budget is spent,
// the roll is redrawn among the other kinds so their ratios stay.
func (c *client) step(ctx context.Context) {
	key := RegisterKey(c.rng.IntN(c.cfg.Keys))
	roll := c.rng.IntN(100)
	if roll >= pctRead+pctWrite+pctCAS {
		if c.creates.Add(1) <= int64(c.cfg.MaxCreates) {
			c.create(ctx)
			return
		}
		roll = c.rng.IntN(pctRead + pctWrite + pctCAS)
	}
	switch {
	case roll < pctRead:
		c.read(ctx, key)
	case roll < pctRead+pctWrite:
		c.write(ctx, key)
	default:
		c.cas(ctx, key)
	}
}

// opContext bounds one request. It is detached from ctx's cancellation:
// cutting a request off when the run ends would only add unknown outcomes.
func (c *client) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.cfg.OpTimeout)
}

func (c *client) newOp(kind Kind, key string) Op {
	return Op{Process: c.process, Server: c.server, Kind: kind, Key: key}
}

// nextValue is unique in the history, and names its writer for humans
// reading a history.
func (c *client) nextValue() int64 {
	return int64(c.process)*valueStride + c.h.seq.Add(1)
}

// read is a default (linearizable) read of a register. It returns the
// bundle read, nil when the read failed.
func (c *client) read(ctx context.Context, key string) (Op, *api.Bundle) {
	octx, cancel := c.opContext(ctx)
	defer cancel()
	op := c.newOp(KindRead, key)
	op.Call = c.h.Now()
	b, meta, err := c.srv.Bundle(octx, key, nil)
	op.Return = c.h.Now()
	if err != nil {
		classify(&op, err)
		return c.h.Add(op), nil
	}
	op.Outcome, op.Index = OK, meta.Index
	v, err := RegisterValue(b)
	if err != nil {
		// A value no write ever wrote: the checker flags it, as it must.
		v, op.Error = -1, err.Error()
	}
	op.Value = v
	return c.h.Add(op), b
}

// write replaces the register unconditionally with a fresh value.
func (c *client) write(ctx context.Context, key string) {
	op := c.newOp(KindWrite, key)
	op.Value = c.nextValue()
	c.replace(ctx, op)
}

// cas reads the register, then replaces it conditionally on the
// modifyIndex that read returned.
func (c *client) cas(ctx context.Context, key string) {
	rd, b := c.read(ctx, key)
	// A zero modifyIndex would make the PUT unconditional: skip it.
	if rd.Outcome != OK || b == nil || b.ModifyIndex == 0 {
		return
	}
	op := c.newOp(KindCAS, key)
	op.Value, op.Expect, op.CAS = c.nextValue(), rd.Value, b.ModifyIndex
	c.replace(ctx, op)
}

func (c *client) replace(ctx context.Context, op Op) {
	octx, cancel := c.opContext(ctx)
	defer cancel()
	spec := RegisterSpec(c.cfg.Pool, op.Key, op.Value)
	op.Call = c.h.Now()
	resp, err := c.srv.ReplaceBundle(octx, spec, op.CAS)
	op.Return = c.h.Now()
	if err != nil {
		classify(&op, err)
	} else {
		op.Outcome, op.Index = OK, resp.Bundle.ModifyIndex
	}
	c.h.Add(op)
}

// create submits a bundle under a fresh id that no other create uses.
func (c *client) create(ctx context.Context) {
	octx, cancel := c.opContext(ctx)
	defer cancel()
	op := c.newOp(KindCreate, fmt.Sprintf("c-%d-%d-%d", c.cfg.Seed, c.process, c.h.seq.Add(1)))
	spec := api.BundleSpec{
		ID: op.Key, Pool: c.cfg.Pool,
		Jobs: []api.Job{{
			Name: "j", Requirements: api.Requirements{Capacity: c.cfg.CreateCapacity},
			Launch: api.Launch{Driver: api.DriverNone},
		}},
	}
	if c.cfg.Backup {
		spec.Resilience = &api.Resilience{SameNode: api.Forbid}
	}
	op.Call = c.h.Now()
	resp, err := c.srv.CreateBundle(octx, spec)
	op.Return = c.h.Now()
	if err != nil {
		classify(&op, err)
	} else {
		op.Outcome, op.Index = OK, resp.Bundle.ModifyIndex
	}
	c.h.Add(op)
}

// classify sets a failed op's Outcome, Code and Error. Only answers that
// prove nothing was applied are Fail for a change: a 4xx, or 503 noLeader
// (the server guarantees nothing was queued). outcomeUnknown, any other
// 5xx, a timeout or a transport error leave a change's fate open. A read
// changes nothing, so any failed read is simply Fail.
func classify(op *Op, err error) {
	op.Error = err.Error()
	var (
		ae *api.Error
		oe *net.OpError
	)
	definite := false
	switch {
	case errors.As(err, &oe) && oe.Op == "dial":
		op.Code, definite = CodeDial, true
	case errors.As(err, &ae):
		op.Code = ae.Code
		definite = ae.Status >= 400 && ae.Status < 500 ||
			ae.Status == 503 && ae.Code == api.CodeNoLeader
	case isTimeout(err):
		op.Code = CodeTimeout
	default:
		op.Code = CodeTransport
	}
	if op.Kind == KindRead || definite {
		op.Outcome = Fail
	} else {
		op.Outcome = Unknown
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
