package scheduler

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
)

type drainCase struct {
	name            string
	spec            fsm.BundleSpec
	primary, backup map[string]string
	filler          map[string]int64
	node            string
	promote         bool
	moved           []string // nil: no update expected
	state           string
	check           func(t *testing.T, st *fsm.State, b *fsm.Bundle)
}

func TestDrain(t *testing.T) {
	pair := map[string]string{"a": "n1", "b": "n2"}
	back := map[string]string{"a": "n3", "b": "n4"}
	sharing := pairSpec("r", true, 2000)
	sharing.Resilience = &fsm.Resilience{SameNode: fsm.Allow, SameAz: fsm.Allow, SameCloud: fsm.Allow}
	full := map[string]int64{"n3": 4000, "n4": 4000, "n5": 4000, "n6": 4000}
	cases := []drainCase{{
		name: "primary on the node, healthy backup: promote first, then move the deposed primary's job",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, node: "n1",
		promote: true, moved: []string{"0/a"}, state: fsm.StatePlaced,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			if got := replicaNodes(b, fsm.RolePrimary); !reflect.DeepEqual(got, back) {
				t.Fatalf("primary %v, want the old backup %v", got, back)
			}
			if n := replicaNodes(b, fsm.RoleBackup)["a"]; n != "n5" && n != "n6" {
				t.Fatalf("moved a to %s: must leave AZ b (new primary) and n2 (b)", n)
			}
		},
	}, {
		name: "no backup: place-then-stop in one update",
		spec: pairSpec("r", false, 2000), primary: pair, node: "n1",
		moved: []string{"0/a"}, state: fsm.StatePlaced,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			var stopped, started *fsm.Assignment
			for _, a := range st.BundleAssignments("r") {
				if a.Job == "a" && a.NodeID == "n1" {
					stopped = a
				} else if a.Job == "a" {
					started = a
				}
			}
			if stopped == nil || started == nil || stopped.Desired != fsm.DesiredStop || started.Desired != fsm.DesiredRun ||
				stopped.ModifyIndex != started.CreateIndex {
				t.Fatalf("want the old assignment stopped at the index the new one starts: %+v / %+v", stopped, started)
			}
		},
	}, {
		name: "backup on the node: only the backup's job moves, no failover",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, node: "n3",
		moved: []string{"1/a"}, state: fsm.StatePlaced,
	}, {
		name: "both replicas on the node: no backup to promote to, both move",
		spec: sharing, primary: pair, backup: map[string]string{"a": "n1", "b": "n3"}, node: "n1",
		moved: []string{"0/a", "1/a"}, state: fsm.StatePlaced,
	}, {
		name: "nothing fits: no update, the node keeps the job",
		spec: pairSpec("r", false, 7000), primary: pair, filler: full, node: "n1",
	}, {
		name: "the deposed primary's job fits nowhere: no promotion either",
		spec: pairSpec("r", true, 7000), primary: pair, backup: back, node: "n1",
		filler: map[string]int64{"n5": 4000, "n6": 4000},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runDrainCase(t, tc) })
	}
}

func runDrainCase(t *testing.T, tc drainCase) {
	c := sixNodes(t)
	for _, node := range slices.Sorted(maps.Keys(tc.filler)) {
		id := "fill-" + node
		c.bundle(fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{mkJob("f", tc.filler[node], 0)}})
		c.placeAt(id, 0, map[string]string{"f": node})
	}
	c.bundle(tc.spec)
	c.placeAt("r", 0, tc.primary)
	if tc.backup != nil {
		c.placeAt("r", 1, tc.backup)
	}
	c.ok(fsm.NodeDrainType, &fsm.NodeFlagRequest{NodeID: tc.node, On: true})
	before := c.state().Bundle("r")
	drain := func() (*Batch, Result) {
		b := newBatch(c, 5)
		return b, b.Drain(before, tc.node)
	}
	batch, res := drain()
	if again, _ := drain(); !reflect.DeepEqual(batch.Plan(1), again.Plan(1)) {
		t.Fatalf("same input gave different plans")
	}
	if tc.moved == nil {
		checkDrainRefused(t, c, batch, res, tc.node)
		return
	}
	u := res.Update
	if u == nil || u.Promote != tc.promote || !slices.Equal(releasedKeys(u.Release), sortedOrEmpty(tc.moved)) ||
		!slices.Equal(placedKeys(u.Place), sortedOrEmpty(tc.moved)) || u.Reason != "node "+tc.node+" draining" {
		t.Fatalf("update %+v: want promote %v, move %v", u, tc.promote, tc.moved)
	}
	c.commit(batch.Plan(1))
	st := c.state()
	after := st.Bundle("r")
	checkInvariants(t, st)
	checkNothingOn(t, st, "r", tc.node)
	checkUntouched(t, before, after, tc.moved)
	if (after.Epoch == before.Epoch+1) != tc.promote || after.State != tc.state {
		t.Fatalf("epoch %d→%d, state %s (want promote %v, %s)", before.Epoch, after.Epoch, after.State, tc.promote, tc.state)
	}
	if tc.check != nil {
		tc.check(t, st, after)
	}
}

// checkDrainRefused: no update, an explanation, and the batch's overlay is
// exactly as before the attempt, so later decisions see the node's usage.
func checkDrainRefused(t *testing.T, c *cluster, batch *Batch, res Result, node string) {
	t.Helper()
	if res.Update != nil || batch.Parts() != 0 || res.Explain == nil {
		t.Fatalf("want no update and an explanation, got %+v", res)
	}
	st := c.state()
	for _, n := range st.Nodes("") {
		_, used, _ := batch.Store().Node(n.ID)
		if !jsonEqual(used, n.Usage) {
			t.Fatalf("node %s: overlay usage %+v after a refused drain, state %+v", n.ID, used, n.Usage)
		}
	}
	for _, r := range st.NodeReservations(node) {
		if _, ok := batch.Store().Reservation(r.Key); !ok {
			t.Fatalf("reservation %s released in the overlay by a refused drain", r.Key)
		}
	}
	if _, used := batch.Store().Pool("p"); used != st.Pool("p").Usage {
		t.Fatalf("pool usage %+v in the overlay, state %+v", used, st.Pool("p").Usage)
	}
}
