package scheduler

import (
	"fmt"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// BenchmarkPreempt: a gold bundle of four pairwise-separate jobs of 44
// units (on 32..64-unit nodes) against clusters 90 % full of silver
// bundles, so making room takes several victims on several nodes. Each
// iteration is Place (which fails) then Preempt on a fresh batch.
func BenchmarkPreempt(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			w := benchInventory(b, n, 0.9)
			spec := fsm.BundleSpec{ID: "gold", Pool: benchPool, Priority: fsm.PriorityGold}
			for j := range 4 {
				job := mkJob(fmt.Sprintf("j%d", j), 44000, 2)
				for k := range j {
					job.SeparateFrom = append(job.SeparateFrom, fmt.Sprintf("j%d", k))
				}
				spec.Jobs = append(spec.Jobs, job)
			}
			bundle := freshBundle(spec)
			snap := NewEngine(Options{}).Snapshot(w.st)
			victims, trials := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch := snap.NewBatch(uint64(i))
				if batch.Place(bundle).PrimaryPlaced {
					b.Fatal("fits without preemption")
				}
				res := batch.Preempt(bundle)
				if len(res.Victims) == 0 {
					b.Fatalf("no preemption: %s", explainString(res.Explain))
				}
				victims += len(res.Victims)
			}
			b.ReportMetric(float64(victims)/float64(b.N), "victims/op")
			_ = trials
		})
	}
}
