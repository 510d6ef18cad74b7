package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// The "sched" suite: the placement engine alone (no Raft, no FSM apply),
// driven through its exported API as the leader's placer drives it. For
// each node count it reports placement throughput and per-bundle decision
// latency for two bundle shapes, and the per-snapshot index build.

func init() { Suites["sched"] = runSched }

// schedSizes are the node counts measured; quick runs stop at 5,000.
var schedSizes = []int{1000, 5000, 10000}

// schedFill is how full the clusters are when measuring.
const schedFill = 0.3

// schedBatch is how many bundles share one snapshot and overlay before a
// fresh batch starts, so the cluster stays at its pre-filled level (the
// leader commits up to 512 per Raft entry).
const schedBatch = 256

type schedShape struct {
	name string
	gen  func(rng *rand.Rand, id string) *fsm.Bundle
}

var schedShapes = []schedShape{
	{"mixed", func(rng *rand.Rand, id string) *fsm.Bundle {
		return schedBundle(rng, id, 1+rng.IntN(4), rng.IntN(2) == 0)
	}},
	{"4-job+backup", func(rng *rand.Rand, id string) *fsm.Bundle { return schedBundle(rng, id, 4, true) }},
}

func runSched(ctx context.Context, o Options) ([]Result, error) {
	sizes, budget := schedSizes, 3*time.Second
	if o.Quick {
		sizes, budget = schedSizes[:2], 500*time.Millisecond
	}
	var out []Result
	for _, n := range sizes {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("sched: %w", err)
		}
		runtime.GC() // measure each size without the previous one's garbage
		w, err := newSchedWorld(n, schedFill)
		if err != nil {
			return out, fmt.Errorf("sched: build %d-node state: %w", n, err)
		}
		for _, shape := range schedShapes {
			m := measurePlace(w, shape, budget)
			out = append(out, m.results(n, shape.name)...)
		}
		out = append(out, measureIndexBuild(w))
		progressf(o, "sched: %d nodes done", n)
	}
	return out, nil
}

// placeRun is one shape's measurement at one node count.
type placeRun struct {
	jobs     int
	unplaced int
	elapsed  time.Duration
	lat      []time.Duration
}

// measurePlace places bundles for about budget (at least 2,000), timing each
// decision; the bundles are generated beforehand so only placement counts.
func measurePlace(w *schedWorld, shape schedShape, budget time.Duration) placeRun {
	snap := w.eng.Snapshot(w.state())
	rng := rand.New(rand.NewPCG(7, 7))
	bundles := make([]*fsm.Bundle, schedBatch)
	for i := range bundles {
		bundles[i] = shape.gen(rng, fmt.Sprintf("bench-%d", i))
	}
	var m placeRun
	var batch *scheduler.Batch
	start := time.Now()
	for i := 0; i < 2000 || time.Since(start) < budget; i++ {
		if i%schedBatch == 0 {
			batch = snap.NewBatch(uint64(i))
		}
		t0 := time.Now()
		res := batch.Place(bundles[i%schedBatch])
		m.lat = append(m.lat, time.Since(t0))
		m.jobs += res.JobsPlaced
		if !res.PrimaryPlaced {
			m.unplaced++
		}
	}
	m.elapsed = time.Since(start)
	return m
}

func (m placeRun) quantile(q float64) time.Duration {
	s := slices.Clone(m.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (m placeRun) results(nodes int, shape string) []Result {
	note := fmt.Sprintf("%d decisions, %.1f%% unplaced, one goroutine", len(m.lat), 100*float64(m.unplaced)/float64(len(m.lat)))
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	name := func(what string) string { return fmt.Sprintf("%s %s nodes=%d", shape, what, nodes) }
	return []Result{
		{Suite: "sched", Name: name("placement"), Value: float64(m.jobs) / m.elapsed.Seconds(), Unit: "jobs/s", Note: note},
		{Suite: "sched", Name: name("decision p50"), Value: us(m.quantile(0.50)), Unit: "µs/bundle"},
		{Suite: "sched", Name: name("decision p99"), Value: us(m.quantile(0.99)), Unit: "µs/bundle"},
	}
}

// measureIndexBuild times a fresh engine's first snapshot of the state,
// which builds the placement index from scratch (a new leader's first pass).
func measureIndexBuild(w *schedWorld) Result {
	st := w.state()
	const runs = 5
	start := time.Now()
	for range runs {
		scheduler.NewEngine(scheduler.Options{}).Snapshot(st)
	}
	ms := float64(time.Since(start).Microseconds()) / 1000 / runs
	return Result{Suite: "sched", Name: fmt.Sprintf("index build nodes=%d", w.nodes), Value: ms, Unit: "ms", Note: "a new leader's first snapshot"}
}

// logf logs progress when the caller gave a logger.
func progressf(o Options, format string, args ...any) {
	if o.Logger != nil {
		o.Logger.Info(fmt.Sprintf(format, args...))
	}
}
