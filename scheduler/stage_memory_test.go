package scheduler

import (
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// memJob is a job that asks for capacity 1 and mem MiB.
func memJob(name string, mem int64) fsm.Job {
	j := mkJob(name, 1000, 0)
	j.Requirements.MemoryMiB = mem
	return j
}

func memNode(id string, mem int64) fsm.Node {
	n := mkNode(id, "p", "a", "x", 16000, 0)
	n.TotalMemoryMiB = mem
	return n
}

// TestMemoryStage: memory is a feasibility stage between capacity and the
// pool caps; a job lands only where its request fits in what the node's
// other requests leave, and a job that fits nowhere is explained as
// "insufficient memory" on the memory stage.
func TestMemoryStage(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	c.node(memNode("n1", 2048))
	c.node(memNode("n2", 8192))
	c.node(memNode("n3", 0)) // memory unknown: no memory requests
	snap := NewEngine(Options{}).Snapshot(c.state())
	task := newTask(snap, Gang{Spec: &fsm.BundleSpec{ID: "m", Pool: "p", Jobs: []fsm.Job{memJob("a", 1)}}})
	chain := names(buildChain(task, task.groups[0], false))
	if i := slices.Index(chain, StageMemory); i < 0 || chain[i-1] != StageCapacity || chain[i+1] != StagePoolCaps {
		t.Fatalf("chain %v: memory must follow capacity and precede poolCaps", chain)
	}
	for _, id := range []string{"b1", "b2"} {
		c.bundle(fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{memJob("a", 4096)}})
		snap := NewEngine(Options{}).Snapshot(c.state())
		batch := snap.NewBatch(1)
		if res := batch.Place(c.state().Bundle(id)); !res.PrimaryPlaced {
			t.Fatalf("%s unplaced: %+v", id, res.Explain)
		}
		c.commit(batch.Plan(1))
		if node := c.state().Bundle(id).Replicas[0].Jobs[0].NodeID; node != "n2" {
			t.Fatalf("%s placed on %s, the only node with 4096 MiB free is n2", id, node)
		}
	}
	b, ex := NewEngine(Options{}).Snapshot(c.state()).DryRun(fsm.BundleSpec{ID: "b3", Pool: "p", Jobs: []fsm.Job{memJob("a", 4096)}}, 1)
	if b.State != fsm.StateUnplaceable || ex == nil || ex.Filtered[StageMemory] != 3 {
		t.Fatalf("state %s explain %+v", b.State, ex)
	}
	if m := ex.NearestMiss; m == nil || m.Stage != StageMemory || !strings.Contains(m.Detail, "insufficient memory") {
		t.Fatalf("nearest miss %+v", ex.NearestMiss)
	}
	checkInvariants(t, c.state())
}

// TestMemoryPoolCapAndDefaults: the pool's maxMemoryMiB bounds the sum of
// its memory requests, and defaults.memoryMiB is what a job that omits
// memory reserves.
func TestMemoryPoolCapAndDefaults(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p", Caps: fsmCaps(3072), Defaults: fsm.PoolDefaults{MemoryMiB: 1024}})
	c.node(memNode("n1", 8192))
	c.node(memNode("n2", 8192))
	spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{memJob("a", 0), memJob("b", 1024), memJob("c", 1024)}}
	b, ex := NewEngine(Options{}).Snapshot(c.state()).DryRun(spec, 1)
	if b.State != fsm.StatePlaced {
		t.Fatalf("three jobs of 1024 MiB under a 3072 MiB cap: %s %+v", b.State, ex)
	}
	for _, j := range b.Replicas[0].Jobs {
		if j.Grant.MemoryMiB != 1024 {
			t.Fatalf("job %s reserves %d MiB, want 1024 (the default for a, its own for b and c)", j.Name, j.Grant.MemoryMiB)
		}
	}
	spec.Jobs = append(spec.Jobs, memJob("d", 1))
	b, ex = NewEngine(Options{}).Snapshot(c.state()).DryRun(spec, 1)
	if b.State != fsm.StateUnplaceable || ex.NearestMiss == nil || ex.NearestMiss.Stage != StagePoolCaps ||
		!strings.Contains(ex.NearestMiss.Detail, "memory cap") {
		t.Fatalf("a fourth job over the pool's memory cap: %s %+v", b.State, ex)
	}
}

// TestScoringDominantResource: binpack and spread weigh a node by its
// dominant resource, the larger of its compute and memory fractions: a node
// whose memory is nearly full reads as nearly full however idle its CPUs.
func TestScoringDominantResource(t *testing.T) {
	for _, tc := range []struct{ scoring, want string }{{fsm.ScoringBinpack, "full"}, {fsm.ScoringSpread, "empty"}} {
		t.Run(tc.scoring, func(t *testing.T) {
			c := newCluster(t)
			c.pool(fsm.Pool{Name: "p", Scoring: tc.scoring})
			// full: little capacity used, most memory used; empty: the
			// other way round, less dominant use overall.
			c.node(memNode("full", 8192))
			c.node(memNode("empty", 8192))
			hog := mkJob("a", 1000, 0)
			hog.Requirements.MemoryMiB = 7168
			c.bundle(fsm.BundleSpec{ID: "hog", Pool: "p", Jobs: []fsm.Job{hog}})
			c.placeAt("hog", 0, map[string]string{"a": "full"})
			cpu := mkJob("a", 8000, 0)
			c.bundle(fsm.BundleSpec{ID: "cpu", Pool: "p", Jobs: []fsm.Job{cpu}})
			c.placeAt("cpu", 0, map[string]string{"a": "empty"})
			b, ex := NewEngine(Options{}).Snapshot(c.state()).DryRun(fsm.BundleSpec{ID: "x", Pool: "p", Jobs: []fsm.Job{memJob("a", 512)}}, 1)
			if b.State != fsm.StatePlaced {
				t.Fatalf("unplaced: %+v", ex)
			}
			if got := b.Replicas[0].Jobs[0].NodeID; got != tc.want {
				t.Fatalf("%s chose %s, want %s (memory 7680/8192 outweighs capacity 9/16)", tc.scoring, got, tc.want)
			}
		})
	}
}

func fsmCaps(mem int64) ledger.PoolCaps { return ledger.PoolCaps{MaxMemoryMiB: mem} }

// TestPreemptForMemory: a gold job short of memory on a node whose
// capacity is mostly free evicts the silver bundle holding the memory,
// although a bronze one would go first if capacity were what it lacked.
func TestPreemptForMemory(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	c.node(memNode("n1", 8192))
	for _, r := range []struct {
		id, priority string
		capacity     int64
		mem          int64
	}{{"z", "bronze", 8000, 0}, {"s", "silver", 1000, 6144}} {
		j := mkJob("a", r.capacity, 0)
		j.Requirements.MemoryMiB = r.mem
		c.bundle(fsm.BundleSpec{ID: r.id, Pool: "p", Priority: r.priority, Jobs: []fsm.Job{j}})
		c.placeAt(r.id, 0, map[string]string{"a": "n1"})
	}
	g := memJob("a", 4096)
	g.Requirements.Capacity = 1000
	c.bundle(fsm.BundleSpec{ID: "g", Pool: "p", Priority: "gold", Jobs: []fsm.Job{g}})
	batch, res := preemptOnce(t, c, "g")
	if len(res.Victims) != 1 || res.Victims[0].BundleID != "s" {
		t.Fatalf("victims %+v, want the silver memory holder s (explain %s)", res.Victims, explainString(res.Explain))
	}
	c.commit(batch.Plan(1))
	checkInvariants(t, c.state())
	if n := c.state().Node("n1"); n.Usage.MemoryMiB != 4096 {
		t.Fatalf("n1 holds %d MiB after the eviction, want the gold job's 4096", n.Usage.MemoryMiB)
	}
}
