package leader

import (
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// TestFailoverPromotesBackup: when the primary's node goes down or leaves,
// the backup becomes primary (epoch up) and the lost replica is re-placed
// as the backup; a suspect node is left alone.
func TestFailoverPromotesBackup(t *testing.T) {
	tests := []struct {
		status string
		moved  bool
	}{
		{fsm.NodeDown, true},
		{fsm.NodeLeft, true},
		{fsm.NodeSuspect, false},
	}
	for _, tc := range tests {
		t.Run(tc.status, func(t *testing.T) {
			e := newEnv(t)
			for _, n := range []string{"n1", "n2", "n3"} {
				e.node(n, "p", 4000, 4, fsm.NodeReady)
			}
			s := spec("b", "p", "", 1000)
			s.Resilience = &fsm.Resilience{SameNode: fsm.Forbid}
			e.create(s)
			e.place("b", 0, "n1")
			e.place("b", 1, "n2")
			epoch := e.get("b").Epoch
			e.setStatus("n1", tc.status)
			f := &failover{l: e.l}
			f.pass(e.ctx)
			b := e.get("b")
			if !tc.moved {
				if ps := e.store.take(); len(ps) != 0 || b.Epoch != epoch || e.nodesOf("b", 0)["a"] != "n1" {
					t.Fatalf("suspect node: proposed %v, primary on %v", typesOf(ps), e.nodesOf("b", 0))
				}
				return
			}
			if b.Epoch != epoch+1 || e.nodesOf("b", 0)["a"] != "n2" || e.nodesOf("b", 1)["a"] != "n3" {
				t.Fatalf("epoch %d (was %d), primary %v, backup %v; want the backup on n2 promoted and a new one on n3",
					b.Epoch, epoch, e.nodesOf("b", 0), e.nodesOf("b", 1))
			}
			if n := e.store.State().Node("n1"); n.Usage.Reservations != 0 {
				t.Fatalf("the lost node still holds %d reservations", n.Usage.Reservations)
			}
			if ps := e.store.take(); len(ps) != 1 || !slices.Equal(ps[0].body.(*fsm.Plan).Lost, []string{"n1"}) {
				t.Fatalf("proposed %v, want one plan that names n1 lost (fsm.Plan.Lost)", typesOf(ps))
			}
			if f.pass(e.ctx) != 0 {
				t.Fatal("a second pass repaired something again")
			}
		})
	}
}

// TestFailoverReplacesOnlyLostJobs: without a backup, only the jobs on the
// lost node move; the others keep their node and their assignment.
func TestFailoverReplacesOnlyLostJobs(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		e.node(n, "p", 1000, 4, fsm.NodeReady)
	}
	s := spec("b", "p", "", 1000, 1000)
	e.create(s)
	(&placer{l: e.l}).pass(e.ctx)
	before := e.nodesOf("b", 0)
	lost, kept := before["a"], before["b"]
	var keptAssignment string
	for _, a := range e.store.State().BundleAssignments("b") {
		if a.NodeID == kept {
			keptAssignment = a.ID
		}
	}
	e.setStatus(lost, fsm.NodeDown)
	if got := (&failover{l: e.l}).pass(e.ctx); got != 1 {
		t.Fatalf("pass repaired %d bundles, want 1", got)
	}
	after := e.nodesOf("b", 0)
	if after["b"] != kept || after["a"] == lost || after["a"] == "" || e.get("b").State != fsm.StatePlaced {
		t.Fatalf("jobs moved from %v to %v; want only job a off %s", before, after, lost)
	}
	if e.store.State().Assignment(keptAssignment) == nil {
		t.Fatalf("the assignment of the job that stayed (%s) was replaced", keptAssignment)
	}
}

// TestFailoverLeavesNodeServices: a node service's reservation on a lost
// node is the services duty's; failover proposes nothing for it.
func TestFailoverLeavesNodeServices(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 4000, 4, fsm.NodeReady)
	e.store.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: fsm.NodeService{ID: "agent", Pools: []string{"p"}}})
	(&services{l: e.l}).pass(e.ctx)
	e.store.take()
	if n := e.store.State().Node("n1"); n.Usage.Reservations != 1 {
		t.Fatalf("n1 holds %d reservations, want the service's", n.Usage.Reservations)
	}
	e.setStatus("n1", fsm.NodeDown)
	if (&failover{l: e.l}).pass(e.ctx) != 0 || len(e.store.take()) != 0 {
		t.Fatal("failover proposed a plan for a node service")
	}
}
