package scheduler

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// TestEngineConcurrentSnapshots: one engine serves concurrent snapshots
// (the leader's batch and API dry runs) that share index parts and CEL
// inputs; run with -race. Every goroutine reaches the same decision.
func TestEngineConcurrentSnapshots(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i := range 40 {
		n := mkNode(fmt.Sprintf("n%02d", i), "p", []string{"a", "b", "c"}[i%3], "x", 8000, 4)
		n.Labels["rack"] = fmt.Sprintf("r%d", i%5)
		c.node(n)
	}
	spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{
		{Name: "a", Requirements: mkJob("a", 2000, 1).Requirements, NodeRules: &fsm.NodeRules{Constraints: []string{`node.labels.rack != "r1"`},
			Affinities: []fsm.Affinity{{Expression: `node.labels.az == "b"`, Weight: 50}}}},
		{Name: "b", Requirements: mkJob("b", 2000, 1).Requirements, SeparateFrom: []string{"a"}},
	}, Resilience: &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Forbid, SameCloud: fsm.Allow}}
	eng := NewEngine(Options{})
	results := make([]*fsm.Bundle, 8)
	var wg sync.WaitGroup
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := eng.Snapshot(c.state()).DryRun(spec, 42)
			results[g] = b
		}()
	}
	wg.Wait()
	for _, b := range results[1:] {
		if !reflect.DeepEqual(b, results[0]) {
			t.Fatalf("concurrent dry runs disagree")
		}
	}
	if results[0].State != fsm.StatePlaced {
		t.Fatalf("state %s, degradations %v", results[0].State, results[0].Degradations)
	}
}

// TestDryRunMatchesCommittedPlacement: the dry run of a spec, with the seed
// the leader will use, is exactly what the leader's batch commits.
func TestDryRunMatchesCommittedPlacement(t *testing.T) {
	c := threeNodes(t)
	spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{mkJob("a", 3000, 1), mkJob("b", 3000, 1)},
		Resilience: &fsm.Resilience{SameNode: fsm.Forbid}}
	dry, ex := DryRun(c.state(), spec, 99)
	if ex != nil {
		t.Fatalf("unexpected explanation %s", explainString(ex))
	}
	b := c.bundle(spec)
	plan, _ := PlaceBatch(c.state(), []*fsm.Bundle{b}, 99, 1)
	c.commit(plan)
	got := c.state().Bundle("b")
	for i := range got.Replicas {
		if !jsonEqual(got.Replicas[i].Jobs, dry.Replicas[i].Jobs) {
			t.Fatalf("replica %d: dry run %+v, committed %+v", i, dry.Replicas[i].Jobs, got.Replicas[i].Jobs)
		}
	}
	if got.State != dry.State {
		t.Fatalf("state: dry run %s, committed %s", dry.State, got.State)
	}
	// A dry run of the placed bundle's id treats it as replaced: its own
	// reservations do not stand in its way.
	again, _ := DryRun(c.state(), spec, 99)
	if !jsonEqual(again.Replicas, dry.Replicas) {
		t.Fatalf("dry run of an existing bundle differs: %+v", again.Replicas)
	}
}

// TestBatchSkipsUnchangedBundles: complete bundles and bundles already
// explained the same way add no plan part, so retries cause no churn.
func TestBatchSkipsUnchangedBundles(t *testing.T) {
	c := threeNodes(t)
	ok := c.bundle(fsm.BundleSpec{ID: "ok", Pool: "p", Jobs: []fsm.Job{mkJob("a", 1000, 0)}})
	big := c.bundle(fsm.BundleSpec{ID: "big", Pool: "p", Jobs: []fsm.Job{mkJob("a", 9000, 0)}})
	plan, res := PlaceBatch(c.state(), []*fsm.Bundle{ok, big}, 1, 1)
	if len(plan.Parts) != 2 || !res[0].PrimaryPlaced || res[1].PrimaryPlaced {
		t.Fatalf("first round: %d parts, %+v", len(plan.Parts), res)
	}
	c.commit(plan)
	st := c.state()
	if st.Bundle("big").State != fsm.StateUnplaceable {
		t.Fatalf("big is %s", st.Bundle("big").State)
	}
	plan, res = PlaceBatch(st, []*fsm.Bundle{st.Bundle("ok"), st.Bundle("big")}, 2, 1)
	if len(plan.Parts) != 0 || res[0].Update != nil || res[1].Update != nil {
		t.Fatalf("second round should change nothing: %+v", plan.Parts)
	}
}

// TestHealPlacesMissingBackup: healing a bundle without a backup places one
// as soon as there is room.
func TestHealPlacesMissingBackup(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	c.node(mkNode("n1", "p", "a", "x", 4000, 0))
	b := c.bundle(fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{mkJob("a", 3000, 0)}, Resilience: &fsm.Resilience{SameNode: fsm.Forbid}})
	plan, res := PlaceBatch(c.state(), []*fsm.Bundle{b}, 1, 1)
	c.commit(plan)
	if !res[0].PrimaryPlaced || res[0].BackupPlaced || !c.state().Bundle("b").HasDegradation(fsm.DegradeNoBackup) {
		t.Fatalf("want noBackup, got %+v", res[0])
	}
	c.node(mkNode("n2", "p", "b", "x", 4000, 0))
	batch := NewEngine(Options{}).Snapshot(c.state()).NewBatch(2)
	r := batch.Heal(c.state().Bundle("b"))
	c.commit(batch.Plan(2))
	got := c.state().Bundle("b")
	if !r.BackupPlaced || got.State != fsm.StatePlaced || replicaNodes(got, fsm.RoleBackup)["a"] != "n2" {
		t.Fatalf("backup not healed: %+v, state %s", r, got.State)
	}
	checkInvariants(t, c.state())
}

// The agent's Planner, declared there; *Engine has its shape.
var _ interface {
	DryRun(*fsm.State, fsm.BundleSpec, uint64) (*fsm.Bundle, *fsm.Explain, error)
} = (*Engine)(nil)
