package scheduler

import (
	"fmt"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// BenchmarkPreempt: a full cluster of 32-unit nodes, each holding four
// primaries and four backups (of the bundles half the cluster away) of 4
// units,
// half bronze and half silver; a gold bundle of one job of 32 units
// (evict=1) or four such jobs kept apart (evict=4). Making room means
// emptying whole nodes, eight victims each, and since backups are preferred
// cluster-wide the shortest fitting prefix of the candidate order is long:
// the deep case. Each iteration is Place (which fails) then Preempt on a
// fresh batch.
func BenchmarkPreempt(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, evict := range []int{1, 4} {
			b.Run(fmt.Sprintf("nodes=%d/evict=%d", n, evict), func(b *testing.B) {
				benchPreempt(b, packedInventory(b, n), evict)
			})
		}
	}
}

func benchPreempt(b *testing.B, st *fsm.State, jobs int) {
	spec := fsm.BundleSpec{ID: "gold", Pool: benchPool, Priority: fsm.PriorityGold}
	for j := range jobs {
		job := mkJob(fmt.Sprintf("j%d", j), 32000, 2)
		for k := range j {
			job.SeparateFrom = append(job.SeparateFrom, fmt.Sprintf("j%d", k))
		}
		spec.Jobs = append(spec.Jobs, job)
	}
	bundle := freshBundle(spec)
	snap := NewEngine(Options{}).Snapshot(st)
	victims := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch := snap.NewBatch(uint64(i))
		if batch.Place(bundle).PrimaryPlaced {
			b.Fatal("fits without preemption")
		}
		res := batch.Preempt(bundle)
		if len(res.Victims) != 8*jobs {
			b.Fatalf("%d victims, want %d: %s", len(res.Victims), 8*jobs, explainString(res.Explain))
		}
		victims += len(res.Victims)
	}
	b.ReportMetric(float64(victims)/float64(b.N), "victims/op")
}

// packedInventory builds (once per size) the full cluster of
// BenchmarkPreempt through the FSM.
func packedInventory(b testing.TB, nodes int) *fsm.State {
	key := fmt.Sprintf("packed/%d", nodes)
	if st, ok := inventories.Load(key); ok {
		return st.(*fsm.State)
	}
	c := newCluster(b.(tb))
	c.pool(fsm.Pool{Name: benchPool})
	for i := range nodes {
		c.node(mkNode(fmt.Sprintf("node-%05d", i), benchPool, []string{"az1", "az2", "az3"}[i%3], "aws", 32000, 16))
	}
	plan := &fsm.Plan{}
	for i := range nodes {
		for k := range 4 {
			id := fmt.Sprintf("r-%05d-%d", i, k)
			spec := fsm.BundleSpec{ID: id, Pool: benchPool, Priority: []string{fsm.PriorityBronze, fsm.PrioritySilver}[k%2],
				Jobs:       []fsm.Job{mkJob("a", 4000, 0)},
				Resilience: &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Allow, SameCloud: fsm.Allow}}
			c.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
			u := fsm.BundleUpdate{BundleID: id, Place: []fsm.Place{
				{Slot: 0, Job: "a", Node: fmt.Sprintf("node-%05d", i), Grant: ledger.Grant{Capacity: 4000}},
				{Slot: 1, Job: "a", Node: fmt.Sprintf("node-%05d", (i+nodes/2)%nodes), Grant: ledger.Grant{Capacity: 4000}},
			}}
			plan.Parts = append(plan.Parts, fsm.PlanPart{Updates: []fsm.BundleUpdate{u}})
		}
	}
	c.commit(plan)
	st := c.state()
	inventories.Store(key, st)
	return st
}
