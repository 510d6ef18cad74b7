package scheduler

import (
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
)

// placedWorld is genWorld with its bundle placed and committed; tried is
// false when there is nothing placed to lose.
func placedWorld(t *rapid.T) (*cluster, bool) {
	w := genWorldN(t, 2, 6)
	plan, res := placeOne(w.c.state(), w.bundle, rapid.Uint64().Draw(t, "placeSeed"))
	w.c.commit(plan)
	return w.c, res.PrimaryPlaced
}

// TestPropertyRepair: on random clusters, after some nodes go down or
// leave, Repair's plan commits whole; the invariants hold; no reservation
// of the bundle is left on a lost node; every job that was not lost keeps
// its node and grant; the epoch advances exactly when the update promotes;
// a complete result keeps every hard rule; the same input gives the same
// plan.
func TestPropertyRepair(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, ok := placedWorld(t)
		if !ok {
			return
		}
		lost := map[string]bool{}
		var ids []string
		for _, n := range c.state().Nodes("p") {
			if rapid.IntRange(0, 2).Draw(t, "lost"+n.ID) == 0 {
				c.status(n.ID, rapid.SampledFrom([]string{fsm.NodeDown, fsm.NodeLeft}).Draw(t, "how"))
				lost[n.ID] = true
				ids = append(ids, n.ID)
			}
		}
		before := c.state().Bundle("b")
		seed := rapid.Uint64().Draw(t, "seed")
		run := func() Result {
			return NewEngine(Options{}).Snapshot(c.state()).NewBatch(seed).Repair(before, lost)
		}
		res, res2 := run(), run()
		if !reflect.DeepEqual(res, res2) {
			t.Fatalf("same input gave different repairs")
		}
		var moved []string
		if res.Update != nil {
			moved = releasedKeys(res.Update.Release)
			c.commit(&fsm.Plan{Now: 1, Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{*res.Update}}}})
		}
		checkAfterMove(t, c, before, res, moved, ids...)
	})
}

// TestPropertyDrain: draining a random node either moves every job of the
// bundle off it in one committed update (with the properties of
// TestPropertyRepair) or changes nothing, the batch's overlay included.
func TestPropertyDrain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, ok := placedWorld(t)
		if !ok {
			return
		}
		nodes := c.state().Nodes("p")
		node := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "drain")].ID
		c.ok(fsm.NodeDrainType, &fsm.NodeFlagRequest{NodeID: node, On: true})
		before := c.state().Bundle("b")
		batch := NewEngine(Options{}).Snapshot(c.state()).NewBatch(rapid.Uint64().Draw(t, "seed"))
		res := batch.Drain(before, node)
		if res.Update == nil {
			on := len(hitJobs(before, func(id string) bool { return id == node })) > 0
			if on && res.Explain == nil {
				t.Fatalf("a refused drain must say why")
			}
			for _, n := range c.state().Nodes("") {
				if _, used, _ := batch.Store().Node(n.ID); !jsonEqual(used, n.Usage) {
					t.Fatalf("refused drain changed the overlay on %s", n.ID)
				}
			}
			return
		}
		c.commit(batch.Plan(1))
		checkAfterMove(t, c, before, res, releasedKeys(res.Update.Release), node)
	})
}

func checkAfterMove(t *rapid.T, c *cluster, before *fsm.Bundle, res Result, moved []string, gone ...string) {
	st := c.state()
	checkInvariants(t, st)
	after := st.Bundle("b")
	for _, r := range st.Reservations() {
		if r.Key.Bundle == "b" && slices.Contains(gone, r.Node) {
			t.Fatalf("reservation %s left on %s", r.Key, r.Node)
		}
	}
	now := slotJobs(after)
	for k, j := range slotJobs(before) {
		if slices.Contains(moved, k) {
			continue
		}
		if got := now[k]; got.NodeID != j.NodeID {
			t.Fatalf("%s was not lost but moved from %s to %s", k, j.NodeID, got.NodeID)
		}
	}
	promoted := res.Update != nil && res.Update.Promote
	if (after.Epoch == before.Epoch+1) != promoted || (after.Epoch != before.Epoch && !promoted) {
		t.Fatalf("epoch %d→%d, promote %v", before.Epoch, after.Epoch, promoted)
	}
	partial := slices.ContainsFunc(after.Replicas, func(r fsm.Replica) bool {
		return !r.Complete() && len(placedOf(&r)) > 0
	})
	if !partial {
		checkHardRules(t, st, after)
	}
	if res.PrimaryPlaced != after.Replicas[0].Complete() {
		t.Fatalf("result says primary placed %v, state %+v", res.PrimaryPlaced, after.Replicas[0])
	}
}
