package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

var benchSizes = []int{1000, 5000, 10000}

// prefillRatio is how full the benchmark clusters start.
const prefillRatio = 0.3

// placement measures placing bundles from gen into batches of the size a
// leader would commit in one Raft entry (a fresh batch every 256 bundles,
// so the cluster stays at its pre-filled level).
type placement struct {
	jobs     int
	elapsed  time.Duration
	lat      []time.Duration
	rejected int
}

func measurePlacement(b *testing.B, w *benchWorld, gen func(*rand.Rand, string) *fsm.Bundle) placement {
	snap := NewEngine(Options{}).Snapshot(w.st)
	rng := rand.New(rand.NewPCG(7, 7))
	bundles := make([]*fsm.Bundle, 256)
	for i := range bundles {
		bundles[i] = gen(rng, fmt.Sprintf("bench-%d", i))
	}
	var m placement
	m.lat = make([]time.Duration, 0, b.N)
	var batch *Batch
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if i%len(bundles) == 0 {
			batch = snap.NewBatch(uint64(i))
		}
		t0 := time.Now()
		res := batch.Place(bundles[i%len(bundles)])
		m.lat = append(m.lat, time.Since(t0))
		m.jobs += res.JobsPlaced
		if !res.PrimaryPlaced {
			m.rejected++
		}
	}
	m.elapsed = time.Since(start)
	b.StopTimer()
	return m
}

func (m placement) quantile(q float64) time.Duration {
	if len(m.lat) == 0 {
		return 0
	}
	s := slices.Clone(m.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (m placement) report(b *testing.B) {
	b.ReportMetric(float64(m.jobs)/m.elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(m.quantile(0.50).Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(m.quantile(0.99).Nanoseconds())/1000, "p99-µs")
	b.ReportMetric(float64(m.rejected)/float64(len(m.lat)), "unplaced/op")
}

func mixedBundle(rng *rand.Rand, id string) *fsm.Bundle {
	return benchBundle(rng, id, 1+rng.IntN(4), rng.IntN(2) == 0)
}

func fourJobBackup(rng *rand.Rand, id string) *fsm.Bundle {
	return benchBundle(rng, id, 4, true)
}

// BenchmarkPlaceMixed: mixed bundles (1-4 jobs, half resilient).
func BenchmarkPlaceMixed(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			measurePlacement(b, benchInventory(b, n, prefillRatio), mixedBundle).report(b)
		})
	}
}

// BenchmarkPlaceFourJobBackup: 4-job bundles with a backup.
func BenchmarkPlaceFourJobBackup(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			measurePlacement(b, benchInventory(b, n, prefillRatio), fourJobBackup).report(b)
		})
	}
}

// BenchmarkSnapshot: building the per-snapshot index from scratch, and
// refreshing it when no node changed in a way it buckets on.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range benchSizes {
		w := benchInventory(b, n, prefillRatio)
		b.Run(fmt.Sprintf("build/nodes=%d", n), func(b *testing.B) {
			for range b.N {
				buildIndex(w.st, w.st.Nodes(""))
			}
		})
		b.Run(fmt.Sprintf("refresh/nodes=%d", n), func(b *testing.B) {
			eng := NewEngine(Options{})
			eng.Snapshot(w.st)
			b.ResetTimer()
			for range b.N {
				eng.Snapshot(w.st)
			}
		})
	}
}

// packing fills an empty cluster with random bundles until the first
// primary that does not fit and returns used/allocatable capacity. The
// bundles ask for capacity only, so the ratio measures how well the policy
// packs, not which exotic resource ran out first.
func packing(b testing.TB, nodes int, scoring string) float64 {
	c := newCluster(b.(tb))
	c.pool(fsm.Pool{Name: benchPool, Scoring: scoring})
	rng := rand.New(rand.NewPCG(uint64(nodes), 9))
	var alloc int64
	for i := range nodes {
		n := benchNode(rng, i)
		n.GPUs, n.Capabilities = nil, nil
		alloc += n.TotalCapacity
		c.node(n)
	}
	batch := NewEngine(Options{}).Snapshot(c.state()).NewBatch(1)
	for i := 0; ; i++ {
		spec := fsm.BundleSpec{ID: fmt.Sprintf("pack-%d", i), Pool: benchPool}
		jobs := 1 + rng.IntN(4)
		for j := range jobs {
			job := mkJob(fmt.Sprintf("j%d", j), int64(1+rng.IntN(8))*1000, 0)
			if j > 0 && rng.IntN(3) == 0 {
				job.CoLocateWith = []string{"j0"}
			}
			spec.Jobs = append(spec.Jobs, job)
		}
		if !batch.Place(freshBundle(spec)).PrimaryPlaced {
			break
		}
	}
	_, used := batch.Store().Pool(benchPool)
	return float64(used.Capacity) / float64(alloc)
}

func BenchmarkPacking(b *testing.B) {
	for _, scoring := range []string{fsm.ScoringBinpack, fsm.ScoringSpread} {
		b.Run(scoring, func(b *testing.B) {
			var ratio float64
			for range b.N {
				ratio = packing(b, 1000, scoring)
			}
			b.ReportMetric(100*ratio, "used-%")
		})
	}
}
