//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/e2e/check"
)

// TestJepsen runs the workload under every selected nemesis against the
// docker-compose deployment and fails on any checker violation.
//
//	AMSERVER_E2E_MODE=smoke  each nemesis once, one shared cluster per size (make e2e)
//	AMSERVER_E2E_MODE=full   AMSERVER_E2E_RUNS runs each, a fresh cluster per run (make jepsen)
//	AMSERVER_E2E_DURATION    workload time per run (smoke 20s, full 60s)
//	AMSERVER_E2E_NEMESES     comma-separated filter, e.g. pause,bridge
//	AMSERVER_E2E_SEED        first run's seed (default: from the clock)
//	AMSERVER_E2E_KEEP=1      leave the last cluster up
//	AMSERVER_E2E_REPORT      full mode: write the reliability report there
//	                         (make jepsen: docs/reliability.md)
//
// Every run is written under e2e/out/<timestamp>/<run>/: summary.json,
// history.json, nemesis.json, logs/, and linearizability.html on failure.
func TestJepsen(t *testing.T) {
	s, err := loadSettings()
	if err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano() % 1_000_000_000
	if v := os.Getenv("AMSERVER_E2E_SEED"); v != "" {
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("AMSERVER_E2E_SEED=%q: %v", v, err)
		}
	}
	started := time.Now()
	commit := commitInfo(t.Context())
	outDir := filepath.Join("out", started.Format("20060102-150405"))
	var reports []check.Report
	t.Cleanup(func() { printReports(t, outDir, reports) })
	next := func(rs runSpec) runSpec {
		rs.seed, rs.duration, rs.outDir = seed, s.duration, outDir
		seed++
		return rs
	}
	add := func(t *testing.T, rep check.Report) {
		reports = append(reports, rep)
		failIfViolated(t, rep, outDir)
	}
	if s.full {
		// The report is written after every run, so a matrix cut short
		// keeps the runs it finished (check.Record.Merge).
		took := map[string]time.Duration{}
		runFull(t, s, next, add, func(nemesis string, d time.Duration) {
			took[nemesis] = d
			writeReliability(t, s, started, commit, reports, took)
		})
	} else {
		runSmoke(t, s, next, add)
	}
}

// runSmoke runs each nemesis once, sharing one cluster per size: healed
// and converged between runs, replaced only when a run left it unhealthy.
func runSmoke(t *testing.T, s settings, next func(runSpec) runSpec, add func(*testing.T, check.Report)) {
	for _, size := range []int{3, 5} {
		group := slices.DeleteFunc(slices.Clone(s.nemeses), func(n nemesisSpec) bool { return n.servers != size })
		if len(group) == 0 {
			continue
		}
		// One subtest per cluster: its cleanup tears the cluster down before
		// the next size needs the same subnet and ports.
		t.Run(fmt.Sprintf("%dservers", size), func(t *testing.T) {
			var c *Cluster
			for _, n := range group {
				if c == nil {
					c = startCluster(t, size)
				}
				t.Run(n.name, func(t *testing.T) {
					defer c.UseLog(t.Logf)()
					rep := runOne(t.Context(), c, next(runSpec{name: n.name, nemesis: n, shared: true}))
					add(t, rep)
					if !healthy(rep) {
						c = nil // the next nemesis gets a fresh cluster
					}
				})
			}
		})
	}
}

// runFull runs every nemesis s.runs times, each on a fresh cluster, and
// calls ran after every run with the time its nemesis has taken so far.
func runFull(t *testing.T, s settings, next func(runSpec) runSpec, add func(*testing.T, check.Report),
	ran func(nemesis string, took time.Duration)) {
	for _, n := range s.nemeses {
		start := time.Now()
		for i := 1; i <= s.runs; i++ {
			name := fmt.Sprintf("%s-%d", n.name, i)
			t.Run(name, func(t *testing.T) {
				c := startCluster(t, n.servers)
				add(t, runOne(t.Context(), c, next(runSpec{name: name, nemesis: n})))
			})
			ran(n.name, time.Since(start))
		}
	}
}

// healthy reports whether the harness left the cluster usable.
func healthy(rep check.Report) bool {
	for _, r := range rep.Results {
		if r.Name == "nemesis" && !r.OK || r.Name == "setup" {
			return false
		}
	}
	return true
}

// failIfViolated fails t with the first violations of every failed check.
func failIfViolated(t *testing.T, rep check.Report, outDir string) {
	t.Helper()
	t.Logf("%s: %d ops (%d unknown), %d samples, %s", rep.Name, rep.Ops, rep.Unknown, rep.Samples, rep.Duration)
	for _, r := range rep.Results {
		if r.OK {
			continue
		}
		shown := r.Violations[:min(len(r.Violations), 5)]
		t.Errorf("%s: %s failed (%d):\n  %s", rep.Name, r.Name, max(r.Count, len(r.Violations)), strings.Join(shown, "\n  "))
	}
	if !rep.OK {
		t.Logf("evidence in e2e/%s", filepath.Join(outDir, rep.Name))
	}
}

// printReports prints the results table to stdout and keeps a copy next
// to the runs.
func printReports(t *testing.T, outDir string, reports []check.Report) {
	if len(reports) == 0 {
		return
	}
	var buf bytes.Buffer
	check.PrintTable(&buf, reports)
	fmt.Printf("\n%s\nruns written to e2e/%s\n", buf.String(), outDir)
	if err := os.MkdirAll(outDir, 0o755); err == nil {
		if err := os.WriteFile(filepath.Join(outDir, "table.txt"), buf.Bytes(), 0o644); err != nil {
			t.Logf("writing table: %v", err)
		}
	}
}
