//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/e2e/check"
)

// TestPlantedBugsCaught is the Docker suite's self-test (PITFALLS: a suite
// that has never caught a bug proves little): the servers run a plantbugs
// build with one bug switched on, under the nemesis that exposes it, and
// at least one of the named checkers must fail. It needs the amserver:plant
// image: run it with `make e2e-plant`. skip-recheck (a placement race) is
// left to the in-process simulation's self-test, which can force the race.
func TestPlantedBugsCaught(t *testing.T) {
	s, err := loadSettings()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bug, nemesis string
		caughtBy     []string
	}{
		// A minority-side server answers default reads from its own state.
		{"stale-read", "isolate-leader", []string{"linearizable"}},
		// The isolated leader acknowledges writes Raft never commits.
		{"early-ack", "isolate-leader", []string{"linearizable", "unique-creates", "final-registers"}},
	}
	outDir := filepath.Join("out", time.Now().Format("20060102-150405")+"-plant")
	var reports []check.Report
	t.Cleanup(func() { printReports(t, outDir, reports) })
	for i, tt := range tests {
		t.Run(tt.bug, func(t *testing.T) {
			t.Setenv("AMSERVER_PLANT_BUGS", tt.bug) // read by compose.plant.yml
			specs, err := selectNemeses(tt.nemesis)
			if err != nil {
				t.Fatal(err)
			}
			c := startCluster(t, 3, "compose.plant.yml")
			rep := runOne(t.Context(), c, runSpec{
				name: "plant-" + tt.bug, nemesis: specs[0], seed: int64(1000 + i),
				duration: s.duration, outDir: outDir,
			})
			reports = append(reports, rep)
			var failed []string
			for _, r := range rep.Results {
				if !r.OK {
					failed = append(failed, r.Name)
				}
			}
			t.Logf("planted %s under %s: failed checks %v", tt.bug, tt.nemesis, failed)
			if !slices.ContainsFunc(failed, func(name string) bool { return slices.Contains(tt.caughtBy, name) }) {
				t.Errorf("planted bug %s was not caught by any of %v", tt.bug, tt.caughtBy)
			}
		})
	}
}
