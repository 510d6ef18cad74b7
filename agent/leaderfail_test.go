package agent_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/ledger"
)

// TestLeaderFailoverDuringPlacementBurst: the leader is killed while bundles
// are being created and placed. Afterwards every acknowledged bundle is
// placed exactly once, reservations match placements one to one, and no
// node is over-committed.
func TestLeaderFailoverDuringPlacementBurst(t *testing.T) {
	tc, _, _ := devCluster(t, 3, 6)
	leader := tc.Leader()
	c := tc.Client(tc.Followers(leader)[0])
	ctx := ctxTimeout(t, 120*time.Second)
	const n = 120
	var wg sync.WaitGroup
	acked := make([]bool, n)
	var ackedSoFar atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				spec := oneJob(fmt.Sprintf("burst-%03d", i), 0.5)
				// Creates are idempotent: one whose outcome the failover left
				// unknown is sent again at once. While no leader is known the
				// client itself retries, paced, on the 503 noLeader answers.
				for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
					if _, err := c.CreateBundle(ctx, spec); err == nil {
						acked[i] = true
						ackedSoFar.Add(1)
						break
					}
				}
			}
		}(w)
		if w == 1 { // half the creators are under way: kill the leader before the others start
			poll.Eventually(t, 30*time.Second, "the burst under way", func() error {
				return poll.Check(ackedSoFar.Load() >= 10, "%d creates acknowledged", ackedSoFar.Load())
			})
			_ = leader.Kill()
		}
	}
	wg.Wait()
	next := tc.Leader(leader)
	poll.Eventually(t, 60*time.Second, "every acknowledged bundle placed", func() error {
		st := next.FSM().State()
		for i, ok := range acked {
			b := st.Bundle(fmt.Sprintf("burst-%03d", i))
			if ok && b == nil {
				return fmt.Errorf("acknowledged bundle %d is missing", i)
			}
			if ok && b.State != fsm.StatePlaced {
				return fmt.Errorf("acknowledged bundle %d is %s", i, b.State)
			}
		}
		return nil
	})
	for i, ok := range acked {
		if !ok {
			t.Fatalf("bundle %d never acknowledged despite retries", i)
		}
	}
	checkPlacementsMatchLedger(t, next.FSM().State())
}

// checkPlacementsMatchLedger: each placed job holds exactly one reservation
// on its node, no reservation lacks a job, and no node is over-committed.
func checkPlacementsMatchLedger(t *testing.T, st *fsm.State) {
	t.Helper()
	want := map[string]string{}
	for _, b := range st.Bundles("", "") {
		for _, r := range b.Replicas {
			for _, j := range r.Jobs {
				if j.Placed() {
					want[ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: j.Name}.String()] = j.NodeID
				}
			}
		}
	}
	got := map[string]string{}
	for _, r := range st.Reservations() {
		if r.Key.Bundle[0] != '~' {
			got[r.Key.String()] = r.Node
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d reservations for %d placed jobs", len(got), len(want))
	}
	for k, node := range want {
		if got[k] != node {
			t.Fatalf("job %s placed on %s but reserved on %q", k, node, got[k])
		}
	}
	for _, n := range st.Nodes("") {
		if err := ledger.Fits(n.Inventory(), n.Usage); err != nil {
			t.Fatalf("node %s over-committed: %v", n.ID, err)
		}
	}
}
