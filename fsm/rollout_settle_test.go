package fsm

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// settleRig is service "s" of count replicas on n1, every replica running
// version 1, for rollouts under SettleRollout.
type settleRig struct {
	*harness
	flag bool // SettleRollout on the replaces and reports
}

func newSettleRig(t testingT, count, maxUnavailable int, flag bool) *settleRig {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	h.readyNode(testNode("n1", "p", "a", "x", 64000, 0))
	spec := testBundle("s", "p", testJob("web", 1000, 0))
	spec.Kind, spec.Count, spec.MaxUnavailable = KindService, count, maxUnavailable
	spec.Jobs[0].Launch = versionLaunch(1)
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	r := &settleRig{harness: h, flag: flag}
	placeUnplaced(h)
	for _, a := range h.fsm.State().BundleAssignments("s") {
		r.report(a.Replica, JobRunning)
	}
	return r
}

func (r *settleRig) replace(edit func(*BundleSpec)) {
	r.t.Helper()
	next := r.fsm.State().Bundle("s").Spec
	next.Jobs = slices.Clone(next.Jobs)
	edit(&next)
	r.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next, Rollout: true, RelaunchUnavailable: true, SettleRollout: r.flag})
}

func (r *settleRig) report(slot int, status string) {
	r.t.Helper()
	for _, a := range r.fsm.State().BundleAssignments("s") {
		if a.Replica == slot && a.Desired == DesiredRun && a.Status != status {
			r.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: a.NodeID, AssignmentID: a.ID, Status: status,
				RelaunchUnavailable: true, SettleRollout: r.flag})
		}
	}
}

// runIndex is the highest modify index of a replica's assignments: the
// run a leader would time.
func (r *settleRig) runIndex(slot int) uint64 {
	var idx uint64
	for _, a := range r.fsm.State().BundleAssignments("s") {
		if a.Replica == slot && a.Desired == DesiredRun {
			idx = max(idx, a.ModifyIndex)
		}
	}
	return idx
}

func (r *settleRig) settled(entries ...SettledReplica) {
	r.t.Helper()
	r.ok(RolloutSettledType, &RolloutSettledRequest{Settled: entries})
}

// relaunched lists the slots on the bundle's generation.
func (r *settleRig) relaunched() []int {
	st := r.fsm.State()
	b := st.Bundle("s")
	var out []int
	for _, a := range st.BundleAssignments("s") {
		if a.Desired == DesiredRun && a.Generation == b.Generation && b.Generation > 0 {
			out = append(out, a.Replica)
		}
	}
	slices.Sort(out)
	return out
}

// TestRolloutSettles: under SettleRollout a relaunched replica's running
// report does not move the rollout on; the leader's RolloutSettled for the
// run it timed does, and one naming an older run, a replica not running or
// a bundle with nothing settling changes nothing. Without the flag (an
// older leader's commands) the report moves it on, as it did.
func TestRolloutSettles(t *testing.T) {
	t.Run("settle", func(t *testing.T) {
		r := newSettleRig(t, 3, 1, true)
		r.replace(func(s *BundleSpec) { s.Jobs[0].Launch = versionLaunch(2) })
		r.report(0, JobRunning)
		b := r.fsm.State().Bundle("s")
		if got := r.relaunched(); !slices.Equal(got, []int{0}) || !slices.Equal(b.Settling, []int{0}) || !b.Rolling {
			t.Fatalf("after replica 0's running report: relaunched %v, settling %v, rolling %v", got, b.Settling, b.Rolling)
		}
		run := r.runIndex(0)
		r.report(0, JobFailed)
		r.report(0, JobRunning) // another run than the one timed
		for _, e := range []SettledReplica{{"s", 0, run}, {"s", 1, r.runIndex(1)}, {"gone", 0, 99}} {
			r.settled(e)
			if got := r.relaunched(); !slices.Equal(got, []int{0}) {
				t.Fatalf("settled %+v: relaunched %v", e, got)
			}
		}
		r.report(0, JobFailed)
		r.settled(SettledReplica{"s", 0, r.runIndex(0)}) // not running
		if got := r.relaunched(); !slices.Equal(got, []int{0}) {
			t.Fatalf("settled while failed: relaunched %v", got)
		}
		for slot := range 3 {
			r.report(slot, JobRunning)
			r.settled(SettledReplica{"s", slot, r.runIndex(slot)})
		}
		b = r.fsm.State().Bundle("s")
		if got := r.relaunched(); !slices.Equal(got, []int{0, 1, 2}) || b.Settling != nil || b.Rolling {
			t.Fatalf("after every replica settled: relaunched %v, settling %v, rolling %v", got, b.Settling, b.Rolling)
		}
		checkInvariants(t, r.fsm)
	})
	t.Run("older leader's commands", func(t *testing.T) {
		r := newSettleRig(t, 3, 1, false)
		r.replace(func(s *BundleSpec) { s.Jobs[0].Launch = versionLaunch(2) })
		r.report(0, JobRunning)
		if got := r.relaunched(); !slices.Equal(got, []int{0, 1}) || r.fsm.State().Bundle("s").Settling != nil {
			t.Fatalf("relaunched %v, settling %v", got, r.fsm.State().Bundle("s").Settling)
		}
	})
}

// TestRolloutSettlingGoesWithItsReplica: a replace that scales a settling
// replica away, or places the bundle afresh, drops it from Settling, so
// that no slot waits on the leader for a replica that is gone.
func TestRolloutSettlingGoesWithItsReplica(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*BundleSpec)
		want []int
	}{
		{"scaled away", func(s *BundleSpec) { s.Count = 1 }, []int{0}},
		{"placed afresh", func(s *BundleSpec) { s.Jobs[0].Requirements.Capacity = 2000 }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSettleRig(t, 3, 3, true)
			r.replace(func(s *BundleSpec) { s.Jobs[0].Launch = versionLaunch(2) })
			if got := r.fsm.State().Bundle("s").Settling; !slices.Equal(got, []int{0, 1, 2}) {
				t.Fatalf("settling %v after the launch change, want [0 1 2]", got)
			}
			r.replace(tc.edit)
			if got := r.fsm.State().Bundle("s").Settling; !slices.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Fatalf("settling %v, want %v", got, tc.want)
			}
			checkInvariants(t, r.fsm)
		})
	}
}

// TestPropertyRolloutSettleBound: whatever replaces, placements, reports
// (running or failed, of any replica, in any order) and leader
// confirmations come, a command relaunches a replica that was available
// only when, after it, the replicas down or relaunched and not yet
// confirmed number at most maxUnavailable. A replica relaunched and not
// confirmed may crash at any moment: counting it available is the bug.
// The model's unconfirmed set is the test's own, not Bundle.Settling.
func TestPropertyRolloutSettleBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newSettleRig(t, rapid.IntRange(1, 4).Draw(t, "count"), rapid.IntRange(1, 2).Draw(t, "maxUnavailable"), true)
		unconfirmed := map[int]bool{}
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			before := settleView(r)
			switch rapid.IntRange(0, 4).Draw(t, "step") {
			case 0:
				r.replace(func(s *BundleSpec) {
					s.Count = rapid.IntRange(1, 4).Draw(t, "newCount")
					s.MaxUnavailable = rapid.IntRange(1, 2).Draw(t, "newMaxUnavailable")
					s.Jobs[0].Launch = versionLaunch(rapid.IntRange(1, 3).Draw(t, "launch"))
				})
			case 1:
				placeUnplaced(r.harness)
			case 2, 3:
				status := rapid.SampledFrom([]string{JobRunning, JobFailed}).Draw(t, "status")
				r.report(rapid.IntRange(0, 3).Draw(t, "slot"), status)
			case 4: // the leader saw a running replica run the window through
				slot := rapid.IntRange(0, 3).Draw(t, "settled")
				if before.down[slot] || before.gens[slot] == nil {
					continue
				}
				r.settled(SettledReplica{"s", slot, r.runIndex(slot)})
				delete(unconfirmed, slot)
			}
			checkSettleBound(t, r, before, unconfirmed)
		}
		checkInvariants(t, r.fsm)
	})
}

// settleSnapshot is what the bound compares across one command.
type settleSnapshot struct {
	gens map[int]map[string]uint64 // slot → assignment id → generation
	down map[int]bool              // slots not running
}

func settleView(r *settleRig) settleSnapshot {
	st := r.fsm.State()
	v := settleSnapshot{gens: map[int]map[string]uint64{}, down: map[int]bool{}}
	for _, rep := range st.Bundle("s").Replicas {
		v.down[rep.Slot] = !replicaAvailable(&rep)
	}
	for _, a := range st.BundleAssignments("s") {
		if a.Desired == DesiredRun {
			if v.gens[a.Replica] == nil {
				v.gens[a.Replica] = map[string]uint64{}
			}
			v.gens[a.Replica][a.ID] = a.Generation
		}
	}
	return v
}

// checkSettleBound adds the replicas the command relaunched to
// unconfirmed and checks the bound when one of them was available.
func checkSettleBound(t *rapid.T, r *settleRig, before settleSnapshot, unconfirmed map[int]bool) {
	after := settleView(r)
	tookAvailable := false
	for slot, gens := range after.gens {
		for id, g := range gens {
			if old, ok := before.gens[slot][id]; ok && g > old {
				tookAvailable = tookAvailable || (!before.down[slot] && !unconfirmed[slot])
				unconfirmed[slot] = true
			}
		}
	}
	for slot := range unconfirmed {
		if _, ok := after.down[slot]; !ok {
			delete(unconfirmed, slot) // scaled away
		}
	}
	out := 0
	for slot, down := range after.down {
		if down || unconfirmed[slot] {
			out++
		}
	}
	if limit := max(r.fsm.State().Bundle("s").Spec.MaxUnavailable, 1); tookAvailable && out > limit {
		t.Fatalf("a command relaunched an available replica and left %d down or unconfirmed, maxUnavailable %d (down %v, unconfirmed %v)",
			out, limit, after.down, unconfirmed)
	}
}
