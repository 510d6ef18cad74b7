//go:build plantbugs

package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/plant"
)

// TestPlantedBugsAreCaught plants each known bug in turn and runs seeds
// until the checker that guards against it fails; a bug that survives
// every seed means the suite is blind to it.
func TestPlantedBugsAreCaught(t *testing.T) {
	cases := []struct {
		name        string
		bug         plant.Bug // none: the harness plants the failure
		clientsFail bool
		faults      []string
		checkers    []string // any of these failing counts as caught
	}{
		{"stale-read", plant.StaleRead, false, []string{FaultPartition, FaultIsolate, FaultPause}, []string{"linearizable", "monotonic-index"}},
		{"early-ack", plant.EarlyAck, false, []string{FaultIsolate, FaultCrashLeader, FaultPartition}, []string{"unique-creates", "linearizable"}},
		{"skip-recheck", plant.SkipRecheck, false, []string{FaultSqueeze}, []string{"placement"}},
		// Every other checker passes a history of nothing but failures.
		{"clients-all-fail", "", true, []string{FaultWorkerKill}, []string{"evidence"}},
	}
	budget := envInt(t, "AMSERVER_PLANT_SEEDS", 48)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bug != "" {
				plant.Set(tc.bug)
				t.Cleanup(func() { plant.Set() })
			}
			opts := Options{Servers: 3, Faults: tc.faults, ClientsFail: tc.clientsFail}
			const batch = 8
			ran := 0
			for first := 1; first <= budget; first += batch {
				caught, by := 0, ""
				for _, o := range runSeeds(t, first, batch, batch, opts, time.Time{}) {
					// A seed whose cluster never ran can catch nothing: it
					// is the harness failing, not the checkers passing.
					if why, failed := setupFailed(o); failed {
						t.Errorf("seed %d never ran, so it could not catch %s: %s", o.Report.Seed, tc.bug, why)
						continue
					}
					ran++
					if name, ok := caughtBy(o, tc.checkers); ok {
						if caught++; by == "" {
							by = fmt.Sprintf("%s: %s", name, o.Summary())
						}
					}
				}
				if caught > 0 {
					t.Logf("caught in %d of seeds %d-%d (%d seeds ran in all); first by %s", caught, first, first+batch-1, ran, by)
					return
				}
			}
			t.Fatalf("%d seeds ran with %s planted (%d asked for) and no checker among %v noticed", ran, tc.bug, budget, tc.checkers)
		})
	}
}

// setupFailed returns the error of a seed whose cluster or workload never
// started.
func setupFailed(o *Outcome) (string, bool) {
	for _, res := range o.Report.Results {
		if res.Name == "setup" && !res.OK {
			return strings.Join(res.Violations, "; "), true
		}
	}
	return "", false
}

// caughtBy returns the first of the expected checkers that failed.
func caughtBy(o *Outcome, expected []string) (string, bool) {
	for _, res := range o.Report.Results {
		for _, name := range expected {
			if res.Name == name && !res.OK {
				return name, true
			}
		}
	}
	return "", false
}
