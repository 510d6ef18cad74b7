package sim

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

// FaultSqueeze is an operator resizing nodes under load: a worker's node is
// re-registered, again and again, with just the capacity it has reserved,
// then given its capacity back. Plans the leader built before a shrink must
// be rejected by the FSM's re-check when they land after it; this is the
// fault that proves the re-check is there.
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
			workload.Sleep(ctx, time.Duration(r.IntN(20))*time.Millisecond)
		}
	}()
	return func(hctx context.Context) error {
		cancel()
		<-done
		return c.restoreCapacity(hctx, w)
	}
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
