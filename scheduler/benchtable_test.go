package scheduler

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/amserver/amserver/fsm"
)

// TestPrintBenchTable prints the placement benchmarks as one table (the
// `make bench-sched` target):
//
//	AMSERVER_SCHED_TABLE=1 go test ./scheduler -run TestPrintBenchTable -v -timeout 30m
//
// It measures on one core (GOMAXPROCS=1): jobs placed per second and p50/p99
// decision time per bundle for mixed bundles and for 4-job bundles with a
// backup at 1,000 / 5,000 / 10,000 nodes, the per-snapshot index build, the
// time per job at 10,000 nodes relative to 1,000, and packing efficiency.
func TestPrintBenchTable(t *testing.T) {
	if os.Getenv("AMSERVER_SCHED_TABLE") == "" {
		t.Skip("set AMSERVER_SCHED_TABLE=1 to run")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var out strings.Builder
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tmixed jobs/s\tmixed p50 µs\tmixed p99 µs\t4-job+backup jobs/s\t4-job p50 µs\t4-job p99 µs\tindex build ms\tindex refresh ms\t")
	perJob := map[int]float64{}
	for _, n := range benchSizes {
		inventories.Clear() // measure each size without the others' heap
		runtime.GC()
		w := benchInventory(t, n, prefillRatio)
		mixed := benchPlacement(w, mixedBundle)
		four := benchPlacement(w, fourJobBackup)
		build := testing.Benchmark(func(b *testing.B) {
			for range b.N {
				buildIndex(w.st, w.st.Nodes(""))
			}
		})
		refresh := testing.Benchmark(func(b *testing.B) {
			eng := NewEngine(Options{})
			eng.Snapshot(w.st)
			b.ResetTimer()
			for range b.N {
				eng.Snapshot(w.st)
			}
		})
		perJob[n] = 1 / mixed.Extra["jobs/s"]
		fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%.2f\t%.2f\t\n", n,
			mixed.Extra["jobs/s"], mixed.Extra["p50-µs"], mixed.Extra["p99-µs"],
			four.Extra["jobs/s"], four.Extra["p50-µs"], four.Extra["p99-µs"],
			float64(build.NsPerOp())/float64(time.Millisecond), float64(refresh.NsPerOp())/float64(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	first, last := benchSizes[0], benchSizes[len(benchSizes)-1]
	fmt.Fprintf(&out, "\ntime per job at %d nodes relative to %d: %.2fx\n", last, first, perJob[last]/perJob[first])
	for _, scoring := range []string{"binpack", "spread"} {
		fmt.Fprintf(&out, "packing (%s, 1,000 empty nodes, until the first rejection): %.1f%% of allocatable capacity used\n",
			scoring, 100*packing(t, 1000, scoring))
	}
	t.Log("\n" + out.String())
}

func benchPlacement(w *benchWorld, gen func(*rand.Rand, string) *fsm.Bundle) testing.BenchmarkResult {
	return testing.Benchmark(func(b *testing.B) {
		measurePlacement(b, w, gen).report(b)
	})
}
