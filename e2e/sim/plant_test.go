//go:build plantbugs

package sim

import (
	"testing"

	"github.com/amserver/amserver/internal/plant"
)

// TestPlantedBugsAreCaught plants each known bug in turn and runs seeds
// until the checker that guards against it fails; a bug that survives
// every seed means the suite is blind to it.
func TestPlantedBugsAreCaught(t *testing.T) {
	cases := []struct {
		bug      plant.Bug
		faults   []string
		checkers []string // any of these failing counts as caught
	}{
		{plant.StaleRead, []string{FaultPartition, FaultIsolate, FaultPause}, []string{"linearizable", "monotonic-index"}},
		{plant.EarlyAck, []string{FaultIsolate, FaultCrashLeader, FaultPartition}, []string{"unique-creates", "linearizable"}},
		{plant.SkipRecheck, []string{FaultSqueeze}, []string{"placement"}},
	}
	budget := envInt(t, "AMSERVER_PLANT_SEEDS", 48)
	for _, tc := range cases {
		t.Run(string(tc.bug), func(t *testing.T) {
			plant.Set(tc.bug)
			t.Cleanup(func() { plant.Set() })
			const batch = 8
			for first := 1; first <= budget; first += batch {
				for _, o := range runSeeds(t, first, batch, batch, Options{Servers: 3, Faults: tc.faults}) {
					if name, ok := caughtBy(o, tc.checkers); ok {
						t.Logf("caught by %s: %s", name, o.Summary())
						return
					}
				}
			}
			t.Fatalf("%d seeds ran with %s planted and no checker among %v noticed", budget, tc.bug, tc.checkers)
		})
	}
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
