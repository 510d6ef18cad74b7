package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
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

// runSeeds simulates seeds first..first+n-1, par at a time, each in its own
// synctest bubble (a subtest), and returns the outcomes in seed order; a seed
// whose cluster could not even start is an outcome with a failed "setup"
// result. Seeds run on virtual time, so par only trades memory for speed:
// the machine's cores bound it, never a verdict. A seed whose turn comes
// after stopBy (when set) is not started and its outcome is nil: a slow
// machine runs fewer seeds instead of losing the whole run to the timeout.
func runSeeds(t *testing.T, first, n, par int, opts Options, stopBy time.Time) []*Outcome {
	t.Helper()
	out := make([]*Outcome, n)
	sem := make(chan struct{}, max(par, 1))
	t.Run("seeds", func(t *testing.T) {
		for i := range n {
			seed := int64(first + i)
			t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				if !stopBy.IsZero() && time.Now().After(stopBy) {
					t.Skip("not started: the run's time is up")
				}
				out[i] = runSeed(t, opts, seed)
			})
		}
	})
	return out
}

// seedsStopBy is when runSeeds stops starting seeds: simReserve before
// the test binary's deadline (go test -timeout), which leaves time for
// the seeds still running, the summary and the replays of failures.
func seedsStopBy(t *testing.T) time.Time {
	d, ok := t.Deadline()
	if !ok {
		return time.Time{}
	}
	return d.Add(-simReserve)
}

// simReserve: the longest seeds take tens of seconds on a slow machine,
// and each of up to three replays one seed's run.
const simReserve = 90 * time.Second

// At least 1/minSeedShare of the asked-for seeds must have run for the
// run to count: a machine that manages fewer fails it.
const minSeedShare = 4

// runSeed simulates one seed in a bubble and checks its history.
func runSeed(t *testing.T, opts Options, seed int64) *Outcome {
	o := opts
	o.Seed = seed
	res, err := runBubble(t, o)
	if err != nil {
		res = &Outcome{Report: check.Report{Name: "sim", Seed: seed}}
		res.Report.Add(check.Result{Name: "setup", Violations: []string{err.Error()}})
		return res
	}
	res.Linearizability()
	if res.Report.OK {
		// Only a failure's history is ever written out; a thousand
		// passing histories with their state samples would not fit.
		res.History, res.Viz = nil, nil
	}
	return res
}

// runBubble runs one seed in a synctest bubble. A goroutine of the seed
// still blocked after everything stopped makes synctest panic; that is a
// leak in the code under test, reported as the seed's failure with the
// blocked goroutines, instead of taking every other seed down with it.
func runBubble(t *testing.T, o Options) (res *Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			err = fmt.Errorf("teardown: %v\n%s", p, durableStacks(string(buf)))
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		res, err = Run(t.Context(), o)
	})
	return res, err
}

// durableStacks keeps the goroutines that wait durably inside a bubble
// other than on a timer: what a leak looks like.
func durableStacks(all string) string {
	var keep []string
	for _, g := range strings.Split(all, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "(durable)") && strings.Contains(head, "synctest bubble") && !strings.Contains(head, "sleep") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// failedCheckers names the checkers an outcome failed, in order.
func failedCheckers(o *Outcome) []string {
	var out []string
	for _, r := range o.Report.Results {
		if !r.OK {
			out = append(out, r.Name)
		}
	}
	return out
}

// replayVerdict runs a failed seed again, alone, and says whether the same
// checkers fail: a failure that does not replay is a race to hunt, named
// as such.
func replayVerdict(t *testing.T, opts Options, o *Outcome) string {
	again := runSeeds(t, int(o.Report.Seed), 1, 1, opts, time.Time{})[0]
	want, got := failedCheckers(o), failedCheckers(again)
	if slices.Equal(want, got) {
		return fmt.Sprintf("replayed alone: the same checkers failed (%s)", strings.Join(got, ", "))
	}
	return fmt.Sprintf("replayed alone: failed %v, not %v: an interleaving the schedule does not fix", got, want)
}

// TestSimulation runs many short seeded fault schedules; every one must pass
// every checker. AMSERVER_SIM_SEEDS, AMSERVER_SIM_FIRST and
// AMSERVER_SIM_PARALLEL size the run, AMSERVER_SIM_FAULTS (a comma list)
// narrows the fault kinds; a failing seed replays with
// AMSERVER_SIM_FIRST=<seed> AMSERVER_SIM_SEEDS=1.
func TestSimulation(t *testing.T) {
	n, par := 16, runtime.GOMAXPROCS(0)
	if raceEnabled {
		n = 4
	}
	n = envInt(t, "AMSERVER_SIM_SEEDS", n)
	par = envInt(t, "AMSERVER_SIM_PARALLEL", par)
	first := envInt(t, "AMSERVER_SIM_FIRST", 1)
	var opts Options
	if f := os.Getenv("AMSERVER_SIM_FAULTS"); f != "" {
		opts.Faults = strings.Split(f, ",")
	}
	start := time.Now()
	outcomes := slices.DeleteFunc(runSeeds(t, first, n, par, opts, seedsStopBy(t)), func(o *Outcome) bool { return o == nil })
	elapsed := time.Since(start)
	printSummary(t, outcomes, elapsed)
	if len(outcomes) < n {
		t.Logf("%d of %d seeds ran; the others were not started before the test's deadline (go test -timeout)", len(outcomes), n)
	}
	if len(outcomes) < max(1, n/minSeedShare) {
		t.Errorf("only %d of %d seeds ran before the test's deadline: too few to count", len(outcomes), n)
	}
	replays := 3 // each replay costs a seed's run; three say enough
	for _, o := range outcomes {
		if o.Report.OK {
			continue
		}
		dir := saveFailure(t, o)
		verdict := "not replayed (three already were)"
		if replays > 0 {
			replays--
			verdict = replayVerdict(t, opts, o)
		}
		t.Errorf("%s\n  %s\n  replay: AMSERVER_SIM_FIRST=%d AMSERVER_SIM_SEEDS=1 go test -run TestSimulation ./e2e/sim\n  report: %s",
			o.Summary(), verdict, o.Report.Seed, dir)
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
	fmt.Fprintln(&b, leastLine(outcomes))
	perMin := float64(len(outcomes)) / elapsed.Minutes()
	fmt.Fprintf(&b, "seeds %d, failed %d, ops %d (unknown %d), %s, %.0f seeds/min\n",
		len(outcomes), failed, ops, unknown, elapsed.Round(time.Second), perMin)
	t.Log(b.String())
}

// leastLine is the least any seed got done, against what each must.
func leastLine(outcomes []*Outcome) string {
	var least *check.Minimums
	for _, o := range outcomes {
		if o.History == nil && o.Done == (check.Minimums{}) {
			continue // never started
		}
		if least == nil {
			d := o.Done
			least = &d
		}
		l := least.Least(o.Done)
		least = &l
	}
	if least == nil {
		return "evidence: no seed ran"
	}
	return fmt.Sprintf("least done by a seed: %s (each must: %s)", least, Minimums)
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
