package fsm

import (
	"io"
	"reflect"
	"testing"
)

// TestAssignmentsShareLaunch: an assignment points at its bundle job's
// launch, as applied and after a restore (which re-links the decoded
// copies); one still running an older generation of a rollout keeps the
// launch it runs. The restored state's digest is the saved one's.
func TestAssignmentsShareLaunch(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	h.readyNode(testNode("n1", "p", "a", "x", 64000, 0))
	launch := func(v string) Launch {
		return Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Command: []string{"/bin/run", v}, Env: map[string]string{"V": v}}}
	}
	plain := testBundle("b", "p", testJob("enc", 1000, 0), testJob("mux", 1000, 0))
	plain.Jobs[0].Launch, plain.Jobs[1].Launch = launch("enc"), launch("mux")
	svc := testBundle("s", "p", testJob("web", 1000, 0))
	svc.Kind, svc.Count, svc.MaxUnavailable = KindService, 2, 1
	svc.Jobs[0].Launch = launch("1")
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: plain})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: svc})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b", 0, "n1")}})
	u := BundleUpdate{BundleID: "s"}
	for slot := range 2 {
		u.Place = append(u.Place, h.placeAll("s", slot, "n1").Updates[0].Place...)
	}
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{u}}}})
	for _, a := range h.fsm.State().BundleAssignments("s") {
		h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: a.ID, Status: JobRunning})
	}
	next := h.fsm.State().Bundle("s").Spec
	next.Jobs = []Job{next.Jobs[0]}
	next.Jobs[0].Launch = launch("2")
	h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next}) // one replica relaunched, one behind

	restored := New(Config{})
	if err := restored.Restore(io.NopCloser(snapshotBytes(t, h.fsm))); err != nil {
		t.Fatal(err)
	}
	if a, b := stateHash(t, h.fsm), stateHash(t, restored); a != b {
		t.Fatalf("restored digest %s, saved %s", b, a)
	}
	for name, f := range map[string]*FSM{"applied": h.fsm, "restored": restored} {
		st := f.State()
		shared, own := 0, 0
		for _, id := range []string{"b", "s"} {
			b := st.Bundle(id)
			for _, a := range st.BundleAssignments(id) {
				job := b.Spec.Job(a.Job)
				switch {
				case a.Launch == nil:
					t.Fatalf("%s: assignment %s has no launch", name, a.ID)
				case a.Launch == &job.Launch:
					shared++
				case a.Generation < b.Generation && a.Launch.Job.Env["V"] == "1":
					own++ // the rollout has not reached it: it runs the old launch
				default:
					t.Fatalf("%s: assignment %s (generation %d of %d) holds %+v, not its job's launch", name, a.ID, a.Generation, b.Generation, a.Launch)
				}
			}
		}
		if shared != 3 || own != 1 {
			t.Fatalf("%s: %d assignments share their job's launch and %d hold an older one, want 3 and 1", name, shared, own)
		}
	}
	if got, want := *restored.State().Assignment(AssignmentID("b", 0, "mux", "n1")).Launch, launch("mux"); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored launch %+v, want %+v", got, want)
	}
}
