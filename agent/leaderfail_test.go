package agent

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

func devLeader(t *testing.T, d *DevCluster, skip *Server) *Server {
	t.Helper()
	var leader *Server
	eventually(t, 30*time.Second, "a ready leader", func() bool {
		for _, s := range d.Servers {
			if s != skip && s.store.IsLeader() && s.store.Ready() {
				leader = s
				return true
			}
		}
		return false
	})
	return leader
}

// otherServer returns a server of the cluster that is not s.
func otherServer(d *DevCluster, s *Server) *Server {
	for _, x := range d.Servers {
		if x != s {
			return x
		}
	}
	return nil
}

// TestLeaderFailoverDuringPlacementBurst: the leader is killed while bundles
// are being created and placed. Afterwards every acknowledged bundle is
// placed exactly once, reservations match placements one to one, and no
// node is over-committed.
func TestLeaderFailoverDuringPlacementBurst(t *testing.T) {
	d, _ := startDev(t, 3, 6, nil)
	leader := devLeader(t, d, nil)
	c, _ := api.New(otherServer(d, leader).HTTPAddr())
	ctx := ctxTimeout(t, 120*time.Second)
	const n = 120
	var wg sync.WaitGroup
	acked := make([]bool, n)
	for w := range 4 {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				spec := oneJob(fmt.Sprintf("burst-%03d", i), 0.5)
				for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
					if _, err := c.CreateBundle(ctx, spec); err == nil {
						acked[i] = true
						break
					}
					time.Sleep(100 * time.Millisecond) // creates are idempotent: retry
				}
			}
		}(w)
		if w == 1 {
			time.Sleep(300 * time.Millisecond)
			_ = leader.Kill()
		}
	}
	wg.Wait()
	next := devLeader(t, d, leader)
	eventually(t, 60*time.Second, "every acknowledged bundle placed", func() bool {
		st := next.fsm.State()
		for i, ok := range acked {
			if b := st.Bundle(fmt.Sprintf("burst-%03d", i)); ok && (b == nil || b.State != fsm.StatePlaced) {
				return false
			}
		}
		return true
	})
	for i, ok := range acked {
		if !ok {
			t.Fatalf("bundle %d never acknowledged despite retries", i)
		}
	}
	checkPlacementsMatchLedger(t, next.fsm.State())
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
