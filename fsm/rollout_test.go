package fsm

import (
	"fmt"
	"testing"
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
