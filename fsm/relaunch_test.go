package fsm

import (
	"reflect"
	"testing"
)

// TestReplaceInPlace: a PUT that changes only launches (or tags, times)
// keeps every reservation, node and the epoch, moves the generation, and
// hands the running assignments the new launch with it; a change of
// requirements, rules or the runtime a launch needs re-places.
func TestReplaceInPlace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(*BundleSpec)
		inPlace  bool // reservations and epoch kept
		relaunch bool // generation moves, assignments take the launch
	}{
		{"env value", func(s *BundleSpec) { s.Jobs[0].Launch.Job.Env = map[string]string{"LEVEL": "2"} }, true, true},
		{"command", func(s *BundleSpec) { s.Jobs[1].Launch.Job.Command = []string{"/bin/true"} }, true, true},
		{"tags only", func(s *BundleSpec) { s.Tags = map[string]string{"team": "b"} }, true, false},
		{"stopAt only", func(s *BundleSpec) { s.StopAt = 1 << 62 }, true, false},
		{"capacity", func(s *BundleSpec) { s.Jobs[0].Requirements.Capacity = 2000 }, false, false},
		{"placement rule", func(s *BundleSpec) { s.Jobs[0].SeparateFrom = []string{"b"} }, false, false},
		{"runtime the launch needs", func(s *BundleSpec) {
			s.Jobs[0].Launch.Job = &LegacyJob{Driver: "docker", Image: "x:1"}
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
			n := testNode("n1", "p", "a", "x", 8000, 0)
			n.Runtimes = []string{"exec", "docker"}
			h.readyNode(n)
			spec := testBundle("b", "p", testJob("a", 1000, 0), testJob("b", 1000, 0))
			for i := range spec.Jobs {
				spec.Jobs[i].Launch = Launch{Kind: "legacy", Job: &LegacyJob{Driver: "exec", Command: []string{"/bin/sleep", "9"}, Env: map[string]string{"LEVEL": "1"}}}
			}
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b", 0, "n1")}})
			before := h.fsm.State()
			old := before.Bundle("b")
			next := old.Spec
			next.Jobs = append([]Job(nil), old.Spec.Jobs...)
			for i := range next.Jobs {
				lj := *next.Jobs[i].Launch.Job
				next.Jobs[i].Launch.Job = &lj
			}
			tc.edit(&next)
			h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next})
			st := h.fsm.State()
			b := st.Bundle("b")
			kept := reflect.DeepEqual(before.Reservations(), st.Reservations()) && b.Epoch == old.Epoch &&
				reflect.DeepEqual(b.Replicas[0].Jobs, old.Replicas[0].Jobs)
			if kept != tc.inPlace {
				t.Fatalf("in place %v, want %v (epoch %d→%d)", kept, tc.inPlace, old.Epoch, b.Epoch)
			}
			if moved := b.Generation != old.Generation; moved != tc.relaunch {
				t.Fatalf("generation %d→%d, relaunch want %v", old.Generation, b.Generation, tc.relaunch)
			}
			for _, a := range st.BundleAssignments("b") {
				if a.Desired != DesiredRun {
					if tc.inPlace {
						t.Fatalf("assignment %s stopped by an in-place change", a.ID)
					}
					continue
				}
				want := b.Spec.Job(a.Job).Launch
				if a.Generation != b.Generation || (tc.inPlace && !reflect.DeepEqual(*a.Launch, want)) {
					t.Fatalf("assignment %s generation %d (bundle %d), launch %+v, want %+v", a.ID, a.Generation, b.Generation, a.Launch, want)
				}
			}
			checkInvariants(t, h.fsm)
		})
	}
}
