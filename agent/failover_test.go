package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
	"github.com/amserver/amserver/worker"
)

// watchOvercommit checks the ledger invariants on every state change until
// the test ends, recording the first violation.
func watchOvercommit(t *testing.T, f *fsm.FSM) func() {
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var violation string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			watch := f.WatchCh()
			st := f.State()
			for _, n := range st.Nodes("") {
				if err := ledger.Fits(n.Inventory(), n.Usage); err != nil {
					mu.Lock()
					if violation == "" {
						violation = fmt.Sprintf("node %s over-committed: %v", n.ID, err)
					}
					mu.Unlock()
				}
			}
			select {
			case <-watch:
			case <-ctx.Done():
			}
		}
	}()
	return func() {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if violation != "" {
			t.Fatal(violation)
		}
	}
}

func workerByID(ws []*worker.Worker, id string) *worker.Worker {
	for _, w := range ws {
		if w.NodeID() == id {
			return w
		}
	}
	return nil
}

// TestWorkerKillPromotesBackup: killing the worker that holds a resilient
// bundle's primary promotes the backup with a larger epoch and places a new
// backup on another live node in another AZ; a bundle without backup on
// that worker is re-placed; no node is ever over-committed.
func TestWorkerKillPromotesBackup(t *testing.T) {
	tc, workers, c := devCluster(t, 1, 6)
	server := tc.Servers()[0]
	check := watchOvercommit(t, server.FSM())
	ctx := ctxTimeout(t, 90*time.Second)
	resilient := api.BundleSpec{ID: "res", Pool: "default", Priority: api.PriorityGold,
		Resilience: &api.Resilience{SameNode: api.Forbid, SameAz: api.Forbid, SameCloud: api.Allow},
		Jobs:       []api.Job{{Name: "enc", Requirements: api.Requirements{Capacity: 6, Cores: 4}}}}
	if _, err := c.CreateBundle(ctx, resilient); err != nil {
		t.Fatal(err)
	}
	before := bundleIs(t, ctx, c, 30*time.Second, "res", "resilient bundle placed", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && allRunning(b)
	})
	victim := before.Replicas[0].Jobs[0].NodeID
	single := api.BundleSpec{ID: "single", Pool: "default",
		Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: 1},
			Affinities: []api.Affinity{{Expression: fmt.Sprintf("node.id == %q", victim), Weight: 100}}}}}
	if _, err := c.CreateBundle(ctx, single); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "single", "single bundle placed on the victim (its affinity)", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && b.Replicas[0].Jobs[0].NodeID == victim
	})

	if err := workerByID(workers, victim).Kill(); err != nil {
		t.Fatal(err)
	}
	after := bundleIs(t, ctx, c, 30*time.Second, "res", "backup promoted and a new backup placed", func(after *api.Bundle) bool {
		return after.Epoch > before.Epoch && len(after.Replicas) == 2 &&
			after.Replicas[0].Jobs[0].NodeID == before.Replicas[1].Jobs[0].NodeID &&
			after.Replicas[1].State == api.StatePlaced && after.Replicas[1].Jobs[0].NodeID != victim
	})
	pn, _, _ := c.Node(ctx, after.Replicas[0].Jobs[0].NodeID, nil)
	bn, _, _ := c.Node(ctx, after.Replicas[1].Jobs[0].NodeID, nil)
	if pn.Labels["az"] == bn.Labels["az"] && after.State != api.StateDegraded {
		t.Fatalf("new backup shares the primary's AZ without a degradation: %+v", after)
	}
	bundleIs(t, ctx, c, 30*time.Second, "single", "the bundle without backup is re-placed elsewhere", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && b.Replicas[0].Jobs[0].NodeID != victim
	})
	n, _, _ := c.Node(ctx, victim, nil)
	if n.Reserved.Capacity != 0 {
		t.Fatalf("the dead node still holds reservations: %+v", n.Reserved)
	}
	fams := scrapeMetrics(t, server)
	f, _ := sample(fams, "amserver_failovers_total")
	p, _ := sample(fams, "amserver_promotions_total")
	if f < 2 || p < 1 {
		t.Errorf("metrics: %v bundles repaired by failover (want 2), %v promotions (want 1)", f, p)
	}
	check()
}
