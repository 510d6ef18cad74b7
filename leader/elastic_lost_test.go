package leader

import (
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

// TestElasticDeletesLostNodeWithStops: a provisioned node that went down
// with a job on it has its job released by the failover, leaving a stop
// its dead worker never acknowledges; once the spawn is given up, the
// provisioner's delete is still called, not held up by that stop for good,
// and the node and its spawn are then forgotten.
func TestElasticDeletesLostNodeWithStops(t *testing.T) {
	e := newEnv(t)
	e.pool(planPool("e", 1, 1))
	d := e.elastic()
	d.pass(e.ctx)
	sp := e.spawns()[0]
	e.register(sp)
	e.bundle("work", "e", "", 1000)
	e.place("work", 0, sp.NodeID)
	e.setStatus(sp.NodeID, fsm.NodeDown)
	release := fsm.BundleUpdate{BundleID: "work", Release: []fsm.SlotJob{{Slot: 0, Job: "a"}}, Reason: "failover"}
	e.store.ok(fsm.ApplyPlanType, &fsm.Plan{Now: e.now(), Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{release}}},
		Lost: []string{sp.NodeID}})
	st := e.store.State()
	if len(st.NodeReservations(sp.NodeID)) != 0 || len(st.NodeAssignments(sp.NodeID)) != 1 {
		t.Fatalf("setup: want the job released with its stop left on the node")
	}
	e.clock.Advance(time.Duration(fsm.DefaultSpawnTimeout))
	d.pass(e.ctx)
	if got := e.store.State().Spawn(sp.ID); got.State != fsm.SpawnDeleting {
		t.Fatalf("spawn %s, want given up", got.State)
	}
	e.prov.takeCalls()
	d.pass(e.ctx)
	if _, deletes := e.prov.takeCalls(); !slices.Equal(deletes, []string{sp.ID}) {
		t.Fatalf("deletes %v, want the lost node's spawn", deletes)
	}
	e.prov.setDeleted(sp.ID, e.clock.Now())
	d.pass(e.ctx)
	if st := e.store.State(); st.Spawn(sp.ID) != nil || st.Node(sp.NodeID) != nil {
		t.Fatal("the given-back node or its spawn is still in the state")
	}
}

// TestElasticGivesBackNodeInOtherPool: a spawn's node that registers in
// another pool (its worker got the wrong --pool) is given back, instead of
// counting as spawning against the pool's maxNodes for good.
func TestElasticGivesBackNodeInOtherPool(t *testing.T) {
	e := newEnv(t)
	e.pool(planPool("e", 1, 1))
	d := e.elastic()
	d.pass(e.ctx)
	sp := e.spawns()[0]
	wrong := *sp
	wrong.Pool = "other"
	e.register(&wrong)
	d.pass(e.ctx)
	got := e.store.State().Spawn(sp.ID)
	if want := "its node registered in pool other, not e"; got.State != fsm.SpawnDeleting || got.DeleteReason != want {
		t.Fatalf("spawn %s (%q), want deleting (%q)", got.State, got.DeleteReason, want)
	}
}
