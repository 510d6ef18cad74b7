package leader

import (
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestPlacerHonoursClusterAndGroupCaps: across pools, the placer stops at
// the cluster's and a cap group's caps, gold first, and the bundles left
// out are unplaceable with the cap named in their explanation.
func TestPlacerHonoursClusterAndGroupCaps(t *testing.T) {
	cases := []struct {
		name     string
		caps     fsm.ClusterCaps
		want     map[string]string // bundle -> state
		stage    string
		unplaced string
	}{
		{"cluster cap", fsm.ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 5000}},
			map[string]string{"g": fsm.StatePlaced, "s": fsm.StatePlaced, "b": fsm.StateUnplaceable}, ledger.DimClusterCaps, "b"},
		{"group cap", fsm.ClusterCaps{Groups: map[string]ledger.PoolCaps{"rack": {MaxCapacity: 3000}}},
			map[string]string{"g": fsm.StatePlaced, "s": fsm.StateUnplaceable, "b": fsm.StatePlaced}, ledger.DimGroupCaps, "s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			// x and y share rack's caps; z is outside every group.
			for _, p := range []fsm.Pool{{Name: "x", CapGroup: "rack"}, {Name: "y", CapGroup: "rack"}, {Name: "z"}} {
				e.store.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
				e.node("n-"+p.Name, p.Name, 8000, 4, fsm.NodeReady)
			}
			e.store.ok(fsm.SetCapsType, &fsm.SetCapsRequest{Caps: tc.caps})
			for _, c := range []struct{ id, pool, prio string }{{"b", "z", fsm.PriorityBronze}, {"s", "y", fsm.PrioritySilver}, {"g", "x", fsm.PriorityGold}} {
				e.bundle(c.id, c.pool, c.prio, 2000)
				e.clock.Advance(time.Second)
			}
			(&placer{l: e.l}).pass(e.ctx)
			for id, want := range tc.want {
				if got := e.get(id).State; got != want {
					t.Errorf("bundle %s is %s, want %s", id, got, want)
				}
			}
			ex := e.get(tc.unplaced).Explain
			if ex == nil || ex.Filtered[tc.stage] != 1 || ex.NearestMiss == nil || ex.NearestMiss.Stage != tc.stage {
				t.Fatalf("explain of %s: %+v", tc.unplaced, ex)
			}
		})
	}
}

// TestPlacerRetriesWhenCapsRise: raising the cluster's caps is a cluster
// change: the bundle the cap kept out is tried again by the next pass.
func TestPlacerRetriesWhenCapsRise(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 8000, 4, fsm.NodeReady)
	e.store.ok(fsm.SetCapsType, &fsm.SetCapsRequest{Caps: fsm.ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 1000}}})
	e.bundle("b", "p", "", 2000)
	p := &placer{l: e.l}
	p.pass(e.ctx)
	if got := e.get("b").State; got != fsm.StateUnplaceable {
		t.Fatalf("bundle b is %s under the cap, want unplaceable", got)
	}
	e.store.ok(fsm.SetCapsType, &fsm.SetCapsRequest{Caps: fsm.ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 4000}}})
	e.clock.Advance(recordCoalesce)
	p.pass(e.ctx)
	if got := e.get("b").State; got != fsm.StatePlaced {
		t.Fatalf("bundle b is %s once the cap rose, want placed", got)
	}
}
