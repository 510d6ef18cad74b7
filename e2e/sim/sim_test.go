package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/e2e/check"
)

// envInt reads an integer knob from the environment.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// runSeeds simulates seeds first..first+n-1, par at a time, and returns the
// outcomes in seed order; a seed whose cluster could not even start is an
// outcome with a failed "setup" result.
func runSeeds(t *testing.T, first, n, par int, opts Options) []*Outcome {
	t.Helper()
	out := make([]*Outcome, n)
	seeds := make(chan int)
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range seeds {
				o := opts
				o.Seed = int64(first + i)
				res, err := Run(t.Context(), o)
				if err != nil {
					res = &Outcome{Report: check.Report{Name: "sim", Seed: o.Seed}}
					res.Report.Add(check.Result{Name: "setup", Violations: []string{err.Error()}})
				}
				if res.Report.OK {
					// Only a failure's history is ever written out; a thousand
					// passing histories with their state samples would not fit.
					res.History, res.Viz = nil, nil
				}
				out[i] = res
			}
		}()
	}
	for i := range n {
		seeds <- i
	}
	close(seeds)
	wg.Wait()
	return out
}

// TestSimulation runs many short seeded fault schedules; every one must pass
// every checker. AMSERVER_SIM_SEEDS, AMSERVER_SIM_FIRST and
// AMSERVER_SIM_PARALLEL size the run, AMSERVER_SIM_FAULTS (a comma list)
// narrows the fault kinds; a failing seed replays with
// AMSERVER_SIM_FIRST=<seed> AMSERVER_SIM_SEEDS=1.
func TestSimulation(t *testing.T) {
	n, par := 16, 8
	if raceEnabled {
		n, par = 4, 2
	}
	n = envInt(t, "AMSERVER_SIM_SEEDS", n)
	par = envInt(t, "AMSERVER_SIM_PARALLEL", par)
	first := envInt(t, "AMSERVER_SIM_FIRST", 1)
	var opts Options
	if f := os.Getenv("AMSERVER_SIM_FAULTS"); f != "" {
		opts.Faults = strings.Split(f, ",")
	}
	start := time.Now()
	outcomes := runSeeds(t, first, n, par, opts)
	elapsed := time.Since(start)
	printSummary(t, outcomes, elapsed)
	for _, o := range outcomes {
		if !o.Report.OK {
			dir := saveFailure(t, o)
			t.Errorf("%s\n  replay: AMSERVER_SIM_FIRST=%d AMSERVER_SIM_SEEDS=1 go test -run TestSimulation ./e2e/sim\n  report: %s",
				o.Summary(), o.Report.Seed, dir)
		}
	}
}

// saveFailure writes a failing seed's report under e2e/out/sim.
func saveFailure(t *testing.T, o *Outcome) string {
	dir := filepath.Join("..", "out", "sim", time.Now().Format("20060102-150405"))
	o.Report.Name = fmt.Sprintf("seed-%d", o.Report.Seed)
	if o.History == nil {
		return "(no history: the cluster never started)"
	}
	if err := check.WriteRun(dir, o.Report, o.History, o.Viz); err != nil {
		t.Logf("write report: %v", err)
	}
	return filepath.Join(dir, o.Report.Name)
}

// printSummary prints one table: seeds by fault kind, and totals.
func printSummary(t *testing.T, outcomes []*Outcome, elapsed time.Duration) {
	kinds := map[string][2]int{} // runs, failures
	ops, unknown, failed := 0, 0, 0
	for _, o := range outcomes {
		ops += o.Report.Ops
		unknown += o.Report.Unknown
		if !o.Report.OK {
			failed++
		}
		for _, f := range o.Faults {
			k := strings.Fields(f)[0]
			k = strings.SplitN(k, "@", 2)[0]
			v := kinds[k]
			v[0]++
			if !o.Report.OK {
				v[1]++
			}
			kinds[k] = v
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-16s %8s %8s\n", "fault", "windows", "failed")
	for _, k := range names {
		fmt.Fprintf(&b, "%-16s %8d %8d\n", k, kinds[k][0], kinds[k][1])
	}
	fmt.Fprintln(&b, convergeLine(outcomes))
	perMin := float64(len(outcomes)) / elapsed.Minutes()
	fmt.Fprintf(&b, "seeds %d, failed %d, ops %d (unknown %d), %s, %.0f seeds/min\n",
		len(outcomes), failed, ops, unknown, elapsed.Round(time.Second), perMin)
	t.Log(b.String())
}

// convergeLine is the distribution of how long seeds took to converge after
// their last heal.
func convergeLine(outcomes []*Outcome) string {
	var took []int64
	for _, o := range outcomes {
		for _, res := range o.Report.Results {
			if res.Name == "converge" && res.OK {
				took = append(took, res.TookMs)
			}
		}
	}
	if len(took) == 0 {
		return "converge: no seed converged"
	}
	slices.Sort(took)
	at := func(q float64) int64 { return took[min(len(took)-1, int(q*float64(len(took))))] }
	return fmt.Sprintf("converge after heal: p50 %dms, p99 %dms, max %dms (limit %s)",
		at(0.50), at(0.99), took[len(took)-1], ConvergeWithin)
}
