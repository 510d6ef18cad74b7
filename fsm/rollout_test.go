package fsm

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"pgregory.net/rapid"
)

// TestServiceRollout: a launch change on a service relaunches at most
// maxUnavailable replicas at a time; a replica's running report lets the
// next one go; the reservations never move.
func TestServiceRollout(t *testing.T) {
	for _, tc := range []struct {
		count, maxUnavailable int
		waves                 []int // replicas relaunched by the change, then by each round of reports
		notRunning            bool  // the change comes before any replica reported running
	}{
		{4, 1, []int{1, 1, 1, 1}, false},
		{4, 2, []int{2, 2}, false},
		{3, 5, []int{3}, false},
		{3, 1, []int{0, 1, 1, 1}, true},
	} {
		t.Run(fmt.Sprintf("%d replicas, maxUnavailable %d", tc.count, tc.maxUnavailable), func(t *testing.T) {
			h := newHarness(t)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
			h.readyNode(testNode("n1", "p", "a", "x", 64000, 0))
			spec := testBundle("s", "p", testJob("web", 1000, 0))
			spec.Kind, spec.Count, spec.MaxUnavailable = KindService, tc.count, tc.maxUnavailable
			spec.Jobs[0].Launch = Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": "1"}}}
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			var u BundleUpdate
			for slot := range tc.count {
				u.Place = append(u.Place, h.placeAll("s", slot, "n1").Updates[0].Place...)
				u.Place[slot].Grant.Capacity = 1000
			}
			u.BundleID = "s"
			h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{u}}}})
			runAll := func() {
				for _, a := range h.fsm.State().BundleAssignments("s") {
					if a.Status != JobRunning {
						h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: a.ID, Status: JobRunning})
					}
				}
			}
			if !tc.notRunning {
				runAll()
			}
			reservations := h.fsm.State().Reservations()
			next := h.fsm.State().Bundle("s").Spec
			next.Jobs = []Job{next.Jobs[0]}
			next.Jobs[0].Launch = Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": "2"}}}
			h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next})
			done := 0
			for round, want := range tc.waves {
				updated := 0
				for _, a := range h.fsm.State().BundleAssignments("s") {
					if a.Generation == 1 {
						updated++
						if a.Launch.Job.Env["V"] != "2" {
							t.Fatalf("assignment %s at generation 1 runs %+v", a.ID, a.Launch)
						}
					}
				}
				if updated-done != want {
					t.Fatalf("round %d: %d replicas relaunched, want %d more than %d", round, updated, want, done)
				}
				done = updated
				runAll() // the relaunched replicas report running again
			}
			if done != tc.count {
				t.Fatalf("rollout ended with %d of %d replicas relaunched", done, tc.count)
			}
			if got := h.fsm.State().Reservations(); len(got) != len(reservations) {
				t.Fatalf("reservations %d → %d", len(reservations), len(got))
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestRolloutMovesOnWhenAReplaceFreesItsBudget: a rollout waiting on an
// unplaced replica (maxUnavailable spent) moves on when a replace that
// leaves the launch alone frees the budget: a scale-down that removes the
// unplaced replica, or a larger maxUnavailable. No replica reports after
// it, so nothing else would move it. A replace committed without Rollout
// (an older leader's) is applied as it was then.
func TestRolloutMovesOnWhenAReplaceFreesItsBudget(t *testing.T) {
	for _, tc := range []struct {
		name           string
		count, maxUnav int  // the replace's
		rollout        bool // the command's flag
		relaunched     int  // replicas at the new generation right after it
	}{
		{"scale-down removes the unplaced replica", 3, 1, true, 1},
		{"larger maxUnavailable", 4, 2, true, 1},
		{"older leader's command", 3, 1, false, 0},
		{"nothing freed", 4, 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
			h.readyNode(testNode("n1", "p", "a", "x", 64000, 0))
			launch := func(v string) Launch {
				return Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": v}}}
			}
			spec := testBundle("s", "p", testJob("web", 1000, 0))
			spec.Kind, spec.Count, spec.MaxUnavailable = KindService, 4, 1
			spec.Jobs[0].Launch = launch("1")
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			u := BundleUpdate{BundleID: "s"}
			for slot := range 3 { // replica 3 stays unplaced: the pool is full
				u.Place = append(u.Place, h.placeAll("s", slot, "n1").Updates[0].Place...)
				u.Place[slot].Grant.Capacity = 1000
			}
			h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{u}}}})
			for _, a := range h.fsm.State().BundleAssignments("s") {
				h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: a.ID, Status: JobRunning})
			}
			next := h.fsm.State().Bundle("s").Spec
			next.Jobs = []Job{next.Jobs[0]} // the state's own slice is not ours to write
			next.Jobs[0].Launch = launch("2")
			h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next, Rollout: true})
			if n := relaunchedReplicas(h); n != 0 {
				t.Fatalf("%d replicas relaunched with the budget spent on the unplaced one", n)
			}
			next = h.fsm.State().Bundle("s").Spec
			next.Count, next.MaxUnavailable = tc.count, tc.maxUnav
			h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next, Rollout: tc.rollout})
			if n := relaunchedReplicas(h); n != tc.relaunched {
				t.Fatalf("%d replicas relaunched after the replace, want %d", n, tc.relaunched)
			}
			if b := h.fsm.State().Bundle("s"); !b.Rolling {
				t.Fatalf("the rollout reads finished with replicas behind: %+v", b.Replicas)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// relaunchedReplicas counts the replicas whose assignments carry the
// bundle's generation.
func relaunchedReplicas(h *harness) int {
	st := h.fsm.State()
	gen := st.Bundle("s").Generation
	slots := map[int]bool{}
	for _, a := range st.BundleAssignments("s") {
		if a.Desired == DesiredRun && a.Generation == gen {
			slots[a.Replica] = true
		}
	}
	return len(slots)
}

// TestPropertyRolloutFinishes: whatever replaces (count, maxUnavailable,
// launch; as the API sends them, with Rollout, and as older leaders did,
// with or without RelaunchUnavailable and SettleRollout), placements,
// reports and the leader's settle confirmations came before, once every
// replica is placed and each round of reports says running (and the
// leader confirms the replicas settling), a service's rollout ends within count rounds with every
// assignment on the bundle's generation. The rollout waiting forever for a
// report that never came is the bug this guards.
func TestPropertyRolloutFinishes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarness(t)
		h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
		h.readyNode(testNode("n1", "p", "a", "x", 64000, 0))
		launch := func(v int) Launch {
			return Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": fmt.Sprint(v)}}}
		}
		spec := testBundle("s", "p", testJob("web", 1000, 0))
		spec.Kind, spec.Count, spec.MaxUnavailable = KindService, 2, 1
		spec.Jobs[0].Launch = launch(0)
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
		for _, step := range rapid.SliceOfN(rapid.IntRange(0, 3), 1, 12).Draw(t, "steps") {
			switch step {
			case 0:
				next := h.fsm.State().Bundle("s").Spec
				next.Jobs = []Job{next.Jobs[0]}
				next.Count = rapid.IntRange(1, 4).Draw(t, "count")
				next.MaxUnavailable = rapid.IntRange(1, 2).Draw(t, "maxUnavailable")
				next.Jobs[0].Launch = launch(rapid.IntRange(0, 2).Draw(t, "launch"))
				unavailableFirst := rapid.Bool().Draw(t, "relaunchUnavailable")
				settle := unavailableFirst && rapid.Bool().Draw(t, "settleRollout") // new leaders set both
				h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next, Rollout: true, RelaunchUnavailable: unavailableFirst, SettleRollout: settle})
			case 1:
				placeUnplaced(h)
			case 2:
				reportRunning(h)
			case 3:
				settleRunning(h)
			}
		}
		placeUnplaced(h)
		count := h.fsm.State().Bundle("s").Spec.Count
		for range count + 1 {
			reportRunning(h)
			settleRunning(h) // the leader, once each has run its window
		}
		st := h.fsm.State()
		b := st.Bundle("s")
		if b.Rolling {
			t.Fatalf("the rollout did not finish: %+v", b.Replicas)
		}
		for _, a := range st.BundleAssignments("s") {
			if a.Desired == DesiredRun && a.Generation != b.Generation {
				t.Fatalf("assignment %s at generation %d, the bundle at %d", a.ID, a.Generation, b.Generation)
			}
		}
		checkInvariants(t, h.fsm)
	})
}

// settleRunning confirms every settling replica of "s" that runs, as the
// leader does once each has run for its window.
func settleRunning(h *harness) {
	b := h.fsm.State().Bundle("s")
	req := &RolloutSettledRequest{}
	for slot, idx := range h.fsm.State().SettlingRuns(b) {
		req.Settled = append(req.Settled, SettledReplica{BundleID: "s", Slot: slot, Index: idx})
	}
	if len(req.Settled) > 0 {
		slices.SortFunc(req.Settled, func(a, b SettledReplica) int { return a.Slot - b.Slot })
		h.ok(RolloutSettledType, req)
	}
}

// placeUnplaced places every replica of "s" that holds no node, on n1.
func placeUnplaced(h *harness) {
	u := BundleUpdate{BundleID: "s"}
	for _, r := range h.fsm.State().Bundle("s").Replicas {
		if !r.Complete() {
			p := h.placeAll("s", r.Slot, "n1").Updates[0].Place
			u.Place = append(u.Place, p...)
		}
	}
	if len(u.Place) > 0 {
		h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{u}}}})
	}
}

// reportRunning has every assignment of "s" that runs here report running.
func reportRunning(h *harness) {
	for _, a := range h.fsm.State().BundleAssignments("s") {
		if a.Desired == DesiredRun && a.Status != JobRunning {
			h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: a.ID, Status: JobRunning})
		}
	}
}

// TestRolloutFlagReadsOnOlderServers: a replace with Rollout decodes on a
// server from before the flag (its request type has no such field) as the
// same replace, and one without it is encoded as before the flag, byte
// for byte: the flag changes nothing on the wire but itself.
func TestRolloutFlagReadsOnOlderServers(t *testing.T) {
	type before struct { // ReplaceBundleRequest before Rollout
		Spec BundleSpec
		CAS  uint64
		Now  int64
	}
	spec := testBundle("x", "p", testJob("web", 1000, 0))
	old, err := Encode(ReplaceBundleType, &before{Spec: spec, CAS: 3, Now: 9})
	if err != nil {
		t.Fatal(err)
	}
	for _, rollout := range []bool{false, true} {
		b, err := Encode(ReplaceBundleType, &ReplaceBundleRequest{Spec: spec, CAS: 3, Now: 9, Rollout: rollout})
		if err != nil {
			t.Fatal(err)
		}
		if !rollout && string(b) != string(old) {
			t.Fatal("a replace without Rollout is encoded differently from before the flag")
		}
		var o before
		if err := codec.NewDecoderBytes(b[1:], msgpackHandle).Decode(&o); err != nil || o.CAS != 3 || o.Now != 9 || o.Spec.ID != "x" {
			t.Fatalf("Rollout %v, decoded by an older server: %v %+v", rollout, err, o)
		}
	}
}
