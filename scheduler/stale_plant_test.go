//go:build plantbugs

package scheduler

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/internal/plant"
)

// TestStalePlanCatchesSkipRecheck: with the SkipRecheck bug planted (the FSM
// commits plan parts without re-checking them), the stale-plan property
// must find a part the oracle rejects and the FSM commits.
func TestStalePlanCatchesSkipRecheck(t *testing.T) {
	plant.Set(plant.SkipRecheck)
	t.Cleanup(func() { plant.Set() })
	caught := 0
	for range staleRounds {
		rapid.Check(t, func(t *rapid.T) {
			_, _, want, pr := staleCase(t)
			if !slices.Equal(want, pr.Committed) {
				caught++
			}
		})
	}
	if caught == 0 {
		t.Fatal("the stale-plan property did not notice plans committed without their re-check")
	}
	t.Logf("%d cases caught the planted bug", caught)
}
