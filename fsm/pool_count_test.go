package fsm

import (
	"testing"
	"time"
)

// TestCapDetailCountsWhatItNames: the explanation of a pool at its maxNodes
// splits what counts against the cap by the states pool status names (a
// bundle blocked there read "N ready" while idle, draining and down nodes
// made up N); the split adds up to what the cap counts, and the global
// cap's detail calls registered spawns registered, whatever their node.
func TestCapDetailCountsWhatItNames(t *testing.T) {
	node := func(id string) Node { return Node{ID: id, Pool: "e", TotalCapacity: 2000, TotalCores: 2} }
	status := func(h *harness, id, s string) { h.ok(NodeStatusType, &NodeStatusRequest{NodeID: id, Status: s}) }
	spawn := func(h *harness, id, nodeID string) {
		h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn(id, nodeID, "e", "small"), Now: 1})
	}
	giveBack := func(h *harness, id string) {
		sp := *h.fsm.State().Spawn(id)
		sp.State, sp.DeleteReason = SpawnDeleting, SpawnTimeoutReason
		h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: sp, Now: 1 + int64(time.Hour)})
	}
	tests := []struct {
		name         string
		setup        func(h *harness)
		pool, global string // details, after "(" and before ")"
	}{
		{"ready with work", func(h *harness) {
			h.readyNode(node("n1"))
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "e", testJob("j", 1000, 1))})
			h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
		}, "1 ready, 0 idle, 0 draining, 0 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"idle", func(h *harness) { h.readyNode(node("n1")) },
			"0 ready, 1 idle, 0 draining, 0 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"draining", func(h *harness) {
			h.readyNode(node("n1"))
			h.ok(NodeDrainType, &NodeFlagRequest{NodeID: "n1", On: true})
		}, "0 ready, 0 idle, 1 draining, 0 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"cordoned", func(h *harness) {
			h.readyNode(node("n1"))
			h.ok(NodeCordonType, &NodeFlagRequest{NodeID: "n1", On: true})
		}, "0 ready, 0 idle, 1 draining, 0 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"down", func(h *harness) {
			h.readyNode(node("n1"))
			status(h, "n1", NodeDown)
		}, "0 ready, 0 idle, 0 draining, 1 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"registered, not ready yet", func(h *harness) { h.ok(RegisterNodeType, &RegisterNodeRequest{Node: node("n1")}) },
			"0 ready, 0 idle, 0 draining, 1 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"left", func(h *harness) {
			h.readyNode(node("n1"))
			status(h, "n1", NodeLeft)
		}, "0 ready, 0 idle, 0 draining, 0 unavailable, 0 spawning", "0 registered, 0 spawning, 0 being given back"},
		{"spawning", func(h *harness) { spawn(h, "r1", "e-1") },
			"0 ready, 0 idle, 0 draining, 0 unavailable, 1 spawning", "0 registered, 1 spawning, 0 being given back"},
		{"provisioned, idle", func(h *harness) {
			spawn(h, "r1", "e-1")
			h.readyNode(node("e-1"))
		}, "0 ready, 1 idle, 0 draining, 0 unavailable, 0 spawning", "1 registered, 0 spawning, 0 being given back"},
		{"provisioned, down", func(h *harness) {
			spawn(h, "r1", "e-1")
			h.readyNode(node("e-1"))
			status(h, "e-1", NodeDown)
		}, "0 ready, 0 idle, 0 draining, 1 unavailable, 0 spawning", "1 registered, 0 spawning, 0 being given back"},
		{"given back before registering", func(h *harness) {
			spawn(h, "r1", "e-1")
			giveBack(h, "r1")
		}, "0 ready, 0 idle, 1 draining, 0 unavailable, 0 spawning", "0 registered, 0 spawning, 1 being given back"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := elasticPool("e", 0)
			p.SpawnTimeout = int64(time.Minute)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: p})
			tc.setup(h)
			st := h.fsm.State()
			c := st.CountPool("e")
			if got, want := PoolCapDetail("e", 9, c), "pool e at maxNodes 9 ("+tc.pool+")"; got != want {
				t.Errorf("pool detail\n got %s\nwant %s", got, want)
			}
			if c.Ready+c.Idle+c.Draining+c.Unavailable != c.Nodes || c.GivingBack > c.Spawning {
				t.Errorf("the split %+v does not add up to what the cap counts", c)
			}
			if got, want := GlobalCapDetail(9, st.CountProvisioned()), "cluster at max provisioned nodes 9 ("+tc.global+")"; got != want {
				t.Errorf("global detail\n got %s\nwant %s", got, want)
			}
		})
	}
}
