package sim

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

// FaultSqueeze is an operator resizing nodes under load: a worker's node
// (the one holding the most, which placement keeps choosing) is
// re-registered, again and again, with just the capacity it has reserved,
// each time the leader has a bundle to place, then given its capacity
// back. Plans the leader built before a shrink must be rejected by the
// FSM's re-check when they land after it; this is the fault that proves
// the re-check is there.
const FaultSqueeze = "squeeze"

// workerCapacity is every simulated worker's full capacity.
const workerCapacity = 4

// squeeze starts resizing w's node until the returned heal runs, which
// gives the node its full capacity back.
func (c *cluster) squeeze(ctx context.Context, w *worker, rng *rand.Rand) healFunc {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	addrs := c.clientAddrs()
	seed := rng.Uint64()
	go func() {
		defer close(done)
		r := rand.New(rand.NewPCG(seed, 1))
		for ctx.Err() == nil {
			// Resize while the leader has a bundle to place: a blind timer
			// mostly shrank the node with no plan in flight (a plan is in
			// flight only for the leader's work time, a few ms per create),
			// so most seeds never tested the re-check at all.
			c.awaitPlacement(ctx, time.Duration(20+r.IntN(80))*time.Millisecond)
			cl, err := c.client(addrs[r.IntN(len(addrs))])
			if err != nil {
				return
			}
			if n, _, err := cl.Node(ctx, w.id, nil); err == nil {
				_, _ = cl.RegisterNode(ctx, c.nodeSpec(w, max(n.Reserved.Capacity, 0.05)))
			}
			// Hold the shrink long enough for the samplers to see an
			// over-commit, should a stale plan have landed on the node.
			workload.Sleep(ctx, time.Duration(20+r.IntN(60))*time.Millisecond)
			_, _ = cl.RegisterNode(ctx, c.nodeSpec(w, workerCapacity))
		}
	}()
	return func(hctx context.Context) error {
		cancel()
		<-done
		return c.restoreCapacity(hctx, w)
	}
}

// busiestWorker is the worker whose node holds the most reserved capacity
// in the leader's state, or a random one when no server leads. The pool
// binpacks: new bundles go to the fullest nodes, and a node it no longer
// places on (the emptiest of three, with each backup on another node)
// could be squeezed all run long without one plan being built for it.
func (c *cluster) busiestWorker(rng *rand.Rand) *worker {
	best := c.workers[rng.IntN(len(c.workers))]
	store := c.leaderStore()
	if store == nil {
		return best
	}
	st := store.State()
	most := int64(-1)
	if n := st.Node(best.id); n != nil {
		most = n.Usage.Capacity
	}
	for _, w := range c.workers {
		if n := st.Node(w.id); n != nil && n.Usage.Capacity > most {
			best, most = w, n.Usage.Capacity
		}
	}
	return best
}

// awaitPlacement waits until the leader's state holds a pending bundle,
// which its placer is then planning for, or until limit has passed. The
// resize that follows lands while that plan is being built: the moment
// the FSM's re-check exists for.
func (c *cluster) awaitPlacement(ctx context.Context, limit time.Duration) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		var wake <-chan time.Time
		var watch <-chan struct{}
		if store := c.leaderStore(); store == nil {
			wake = time.After(5 * time.Millisecond) // no leader: look again shortly
		} else {
			watch = store.WatchCh()
			if len(store.State().BundlesInState(fsm.StatePending)) > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-wake:
		case <-watch:
		}
	}
}

// leaderStore is the current leader's store, or nil when no server leads.
func (c *cluster) leaderStore() *raftstore.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		if s.srv != nil && !s.paused && s.srv.Store().IsLeader() {
			return s.srv.Store()
		}
	}
	return nil
}

// restoreCapacity re-registers w's node at full capacity, retrying through
// leader changes.
func (c *cluster) restoreCapacity(ctx context.Context, w *worker) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		for _, addr := range c.clientAddrs() {
			cl, cerr := c.client(addr)
			if cerr != nil {
				return cerr
			}
			if _, err = cl.RegisterNode(ctx, c.nodeSpec(w, workerCapacity)); err == nil {
				return nil
			}
		}
		workload.Sleep(ctx, 50*time.Millisecond)
	}
	return err
}

// nodeSpec is w's inventory with the given capacity.
func (c *cluster) nodeSpec(w *worker, capacity float64) api.NodeSpec {
	return api.NodeSpec{
		ID: w.id, Pool: Pool, TotalCapacity: capacity, TotalCores: 4,
		Labels: map[string]string{"az": w.az, "cloud": w.cloud},
	}
}
