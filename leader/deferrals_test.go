package leader

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
)

// TestDeferralsMatchTheModel checks the deferral queue against the map it
// replaced: Due returns the first n bundles, in placement order, whose pause
// is over and which still need a search, skipping those asked, whatever
// order the adds, removes, state changes and passes come in.
func TestDeferralsMatchTheModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := newDeferrals()
		model := map[string]time.Time{}
		world := map[string]*fsm.Bundle{}
		base := time.Unix(1_700_000_000, 0)
		now := base
		ids := make([]string, 12)
		for i := range ids {
			ids[i] = fmt.Sprintf("b%02d", i)
			prio := rapid.SampledFrom([]string{"", fsm.PriorityGold, fsm.PrioritySilver, fsm.PriorityBronze}).Draw(t, "prio")
			world[ids[i]] = &fsm.Bundle{
				Spec:  fsm.BundleSpec{ID: ids[i], Priority: prio},
				State: fsm.StateUnplaceable, SubmitTime: rapid.Int64Range(0, 3).Draw(t, "submit"),
			}
		}
		lookup := func(id string) *fsm.Bundle { return world[id] }
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(t, "id")
				at := now.Add(time.Duration(rapid.IntRange(-2, 5).Draw(t, "at")) * time.Second)
				d.Add(id, at)
				model[id] = at
			},
			"remove": func(t *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(t, "id")
				d.Remove(id)
				delete(model, id)
			},
			"settle": func(t *rapid.T) {
				// Placed or deleted: it no longer needs a search, for good
				// (a bundle that fails again is deferred again by Add).
				id := rapid.SampledFrom(ids).Draw(t, "id")
				if rapid.Bool().Draw(t, "deleted") {
					world[id] = nil
				} else if b := world[id]; b != nil {
					b.State = fsm.StateScheduled
				}
			},
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "secs")) * time.Second)
			},
			"due": func(t *rapid.T) {
				n := rapid.IntRange(1, 5).Draw(t, "n")
				skip := map[string]bool{rapid.SampledFrom(ids).Draw(t, "skip"): true}
				got := d.Due(lookup, now, n, func(id string) bool { return skip[id] })
				want := modelDue(model, world, now, n, skip)
				if !slices.Equal(bundleIDs(got), want) {
					t.Fatalf("Due(n=%d, skip %v) = %v, model %v", n, skip, bundleIDs(got), want)
				}
			},
		})
	})
}

// modelDue is Due over a plain map: every deferred bundle whose pause is
// over and which still needs a search, sorted as the placer sorts, first n.
func modelDue(model map[string]time.Time, world map[string]*fsm.Bundle, now time.Time, n int, skip map[string]bool) []string {
	var due []*fsm.Bundle
	for id, at := range model {
		b := world[id]
		if at.After(now) || !needsSearch(b) || skip[id] {
			continue
		}
		due = append(due, b)
	}
	sortByBand(due)
	ids := bundleIDs(due)
	return ids[:min(n, len(ids))]
}

func bundleIDs(list []*fsm.Bundle) []string {
	out := []string{}
	for _, b := range list {
		out = append(out, b.ID())
	}
	return out
}
