package fsm

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyReplaceInPlace: random edits of a placed bundle's spec keep
// every reservation, node and the epoch exactly when they touch only
// launches (same runtime), tags, priority or times; the generation moves
// exactly when a launch changed in place; the ledger invariants hold.
func TestPropertyReplaceInPlace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarness(t)
		h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
		h.readyNode(testNode("n1", "p", "a", "x", 64000, 8))
		spec := testBundle("b", "p", testJob("a", 1000, 1), testJob("b", 2000, 0))
		for i := range spec.Jobs {
			spec.Jobs[i].Launch = Launch{Kind: "legacy", Job: &LegacyJob{Driver: "exec", Command: []string{"/bin/x"}}}
		}
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
		h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b", 0, "n1")}})
		before := h.fsm.State()
		old := before.Bundle("b")
		next := old.Spec
		next.Jobs = append([]Job(nil), old.Spec.Jobs...)
		for _, edit := range rapid.SliceOfN(rapid.IntRange(0, 6), 0, 4).Draw(t, "edits") {
			j := &next.Jobs[rapid.IntRange(0, 1).Draw(t, "job")]
			switch edit {
			case 0:
				j.Launch.Job = &LegacyJob{Driver: "exec", Command: []string{"/bin/x", rapid.StringMatching(`[a-z]{1,4}`).Draw(t, "arg")}}
			case 1:
				next.Tags = map[string]string{"k": rapid.StringMatching(`[a-z]{1,4}`).Draw(t, "tag")}
			case 2:
				next.Priority = rapid.SampledFrom([]string{PriorityGold, PrioritySilver, PriorityBronze}).Draw(t, "prio")
			case 3:
				next.StopAt = 1 << 62
			case 4:
				j.Requirements.Capacity += 500
			case 5:
				j.EditRules().Tolerations = []string{"t"}
			case 6:
				j.Launch.Job = &LegacyJob{Driver: "none"} // another runtime: a placement rule
			}
		}
		// The oracle, from the final spec: in place unless a requirement,
		// a rule or a launch's driver differs; relaunched when a launch does.
		inPlace, relaunch := true, false
		for i, j := range next.Jobs {
			o := old.Spec.Jobs[i]
			if j.Requirements.Capacity != o.Requirements.Capacity || len(j.Tolerations()) != len(o.Tolerations()) ||
				j.Launch.Job.Driver != o.Launch.Job.Driver {
				inPlace = false
			}
			relaunch = relaunch || !reflect.DeepEqual(j.Launch, o.Launch)
		}
		h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next})
		st := h.fsm.State()
		b := st.Bundle("b")
		kept := reflect.DeepEqual(before.Reservations(), st.Reservations()) && b.Epoch == old.Epoch
		if kept != inPlace {
			t.Fatalf("kept %v, want %v (epoch %d→%d)", kept, inPlace, old.Epoch, b.Epoch)
		}
		if moved := b.Generation != old.Generation; moved != (inPlace && relaunch) {
			t.Fatalf("generation %d→%d, want a move %v", old.Generation, b.Generation, inPlace && relaunch)
		}
		checkInvariants(t, h.fsm)
	})
}
