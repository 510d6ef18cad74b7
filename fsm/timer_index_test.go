package fsm

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// somethingDue reports whether the leader's timers have anything to do
// for b at now: what leader.dueAt proposes, from the same predicates.
func somethingDue(b *Bundle, now int64) bool {
	if b.State == StateScheduled && b.Spec.EffectiveStart() <= now {
		return true
	}
	if stop := b.Spec.EffectiveStop(); !b.Deleting && stop != 0 && stop <= now {
		return true
	}
	return len(b.DueRestarts(now)) > 0 || b.Expired(now)
}

// TestNextTimerIsTheFirstDueTime: nothing is due for a bundle before its
// NextTimer (nothing ever while it is 0), and something is due at it, so a
// leader that reads only the timer index up to now misses no timer.
func TestNextTimerIsTheFirstDueTime(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		times := rapid.Int64Range(-5, 100)
		b := &Bundle{
			Spec: BundleSpec{ID: "b", StartAt: times.Draw(rt, "start"), StopAt: times.Draw(rt, "stop"),
				TTLAfterFinished: rapid.Int64Range(0, 20).Draw(rt, "ttl")},
			State:      rapid.SampledFrom([]string{StateScheduled, StatePending, StatePlaced}).Draw(rt, "state"),
			Deleting:   rapid.Bool().Draw(rt, "deleting"),
			Outcome:    rapid.SampledFrom([]string{"", StateComplete}).Draw(rt, "outcome"),
			FinishTime: times.Draw(rt, "finish"),
		}
		if rapid.Bool().Draw(rt, "batch") {
			b.Spec.Kind = KindBatch
		}
		for i := range rapid.IntRange(0, 2).Draw(rt, "replicas") {
			r := Replica{Slot: i}
			for range rapid.IntRange(0, 2).Draw(rt, "jobs") {
				j := JobPlacement{Name: "j", RestartAt: times.Draw(rt, "restartAt")}
				if rapid.Bool().Draw(rt, "placed") {
					j.NodeID = "n1"
				}
				r.Jobs = append(r.Jobs, j)
			}
			b.Replicas = append(b.Replicas, r)
		}
		next := b.NextTimer()
		for now := int64(1); now <= 130; now++ { // a real clock is past 0: earlier times are due at once
			due := somethingDue(b, now)
			switch {
			case (next == 0 || now < next) && due:
				rt.Fatalf("due at %d before its next timer %d: %+v", now, next, b)
			case next != 0 && now == next && !due:
				rt.Fatalf("nothing due at its next timer %d: %+v", next, b)
			}
		}
	})
}

// TestBundlesByTimerOrder: the timer index holds exactly the bundles with a
// timer, earliest first.
func TestBundlesByTimerOrder(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	for i, start := range []int64{0, 5e18, 3e18, 0, 4e18} {
		s := testBundle(string(rune('a'+i)), "p", testJob("j", 100, 0))
		s.StartAt = start
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: s})
	}
	var got []string
	var times []int64
	for b := range h.fsm.State().BundlesByTimer() {
		got, times = append(got, b.ID()), append(times, b.NextTimer())
	}
	if want := []string{"c", "e", "b"}; !slices.Equal(got, want) || !slices.IsSorted(times) {
		t.Fatalf("timer index %v at %v, want %v in time order", got, times, want)
	}
}
