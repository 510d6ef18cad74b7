package fsm

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// planFixture: pool p with caps, two nodes, and bundles a, b, c waiting.
func planFixture(t *testing.T) *harness {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p", Caps: ledger.PoolCaps{MaxCapacity: 7000}}})
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.readyNode(testNode("n2", "p", "az2", "c1", 4000, 4))
	for _, id := range []string{"a", "b", "c"} {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(id, "p", testJob("j", 1000, 0))})
	}
	return h
}

func place(bundle string, slot int, node string, g ledger.Grant) PlanPart {
	return PlanPart{Updates: []BundleUpdate{{BundleID: bundle, Place: []Place{{Slot: slot, Job: "j", Node: node, Grant: g}}}}}
}

// TestPlanRecheckRejectsConflicts: plans computed against an older state
// (each "stale" part assumed resources that another commit has since taken)
// are rejected at apply time, dimension by dimension, and change nothing.
func TestPlanRecheckRejectsConflicts(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(h *harness)
		part    PlanPart
		wantErr string
	}{
		{"capacity taken by an earlier plan",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{Capacity: 3500})}})
			},
			place("b", 0, "n1", ledger.Grant{Capacity: 1000}), "capacity"},
		{"pinned core already held",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{Capacity: 100, Cores: []int{0, 1}})}})
			},
			place("b", 0, "n1", ledger.Grant{Capacity: 100, Cores: []int{1}}), "cores"},
		{"gpu share exceeds device",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{GPU: &ledger.GPUShare{Index: 0, Capacity: 700}})}})
			},
			place("b", 0, "n1", ledger.Grant{GPU: &ledger.GPUShare{Index: 0, Capacity: 500}}), "gpu"},
		{"exclusive gpu already shared",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{GPU: &ledger.GPUShare{Index: 0, Capacity: 100}})}})
			},
			place("b", 0, "n1", ledger.Grant{ExclusiveGPUs: []int{0}}), "gpu"},
		{"capability count exhausted",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{Capabilities: []ledger.CapabilityCount{{Name: "nic", Count: 2}}})}})
			},
			place("b", 0, "n1", ledger.Grant{Capabilities: []ledger.CapabilityCount{{Name: "nic", Count: 1}}}), "capability:nic"},
		{"pool cap reached across nodes",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{
					place("a", 0, "n1", ledger.Grant{Capacity: 4000}), place("c", 0, "n2", ledger.Grant{Capacity: 2500}),
				}})
			},
			place("b", 0, "n2", ledger.Grant{Capacity: 1000}), "poolCaps"},
		{"node went down since the plan was computed",
			func(h *harness) { h.ok(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeDown}) },
			place("b", 0, "n1", ledger.Grant{Capacity: 100}), "not placeable"},
		{"node cordoned since",
			func(h *harness) { h.ok(NodeCordonType, &NodeFlagRequest{NodeID: "n1", On: true}) },
			place("b", 0, "n1", ledger.Grant{Capacity: 100}), "not placeable"},
		{"job placed meanwhile by another leader",
			func(h *harness) {
				h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("b", 0, "n2", ledger.Grant{Capacity: 100})}})
			},
			place("b", 0, "n1", ledger.Grant{Capacity: 100}), "already placed"},
		{"bundle deleted since",
			func(h *harness) { h.ok(DeleteBundleType, &DeleteBundleRequest{ID: "b"}) },
			place("b", 0, "n1", ledger.Grant{Capacity: 100}), "being deleted"},
		{"core outside the node",
			func(h *harness) {},
			place("b", 0, "n1", ledger.Grant{Cores: []int{9}}), "core"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := planFixture(t)
			tc.setup(h)
			before := stateHash(t, h.fsm)
			res := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{tc.part}})
			pr := res.Value.(*PlanResult)
			if len(pr.Committed) != 0 || len(pr.Rejected) != 1 {
				t.Fatalf("want the part rejected, got %+v", pr)
			}
			if !strings.Contains(pr.Rejected[0].Reason, tc.wantErr) {
				t.Fatalf("rejection %q does not mention %q", pr.Rejected[0].Reason, tc.wantErr)
			}
			// Only the index table may move (the plan entry itself); no row changes.
			if after := stateHash(t, h.fsm); after != before {
				t.Fatalf("rejected part changed state")
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestPlanPartsCommitIndependently: a batch with one fitting and one
// conflicting part commits the first, rejects the second.
func TestPlanPartsCommitIndependently(t *testing.T) {
	h := planFixture(t)
	res := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{
		place("a", 0, "n1", ledger.Grant{Capacity: 3000}),
		place("b", 0, "n1", ledger.Grant{Capacity: 3000}), // over n1's 4000
		place("c", 0, "n2", ledger.Grant{Capacity: 3000}),
	}})
	pr := res.Value.(*PlanResult)
	if len(pr.Committed) != 2 || pr.Committed[0] != 0 || pr.Committed[1] != 2 {
		t.Fatalf("committed = %v, want [0 2]", pr.Committed)
	}
	if len(pr.Rejected) != 1 || pr.Rejected[0].BundleID != "b" || !pr.Rejected[0].Exhausted {
		t.Fatalf("rejected = %+v", pr.Rejected)
	}
	st := h.fsm.State()
	if got := st.Bundle("a").State; got != StatePlaced {
		t.Fatalf("a state %s", got)
	}
	if got := st.Bundle("b").State; got != StatePending {
		t.Fatalf("b state %s", got)
	}
	checkInvariants(t, h.fsm)
}

// TestPlanPartIsAtomic: an eviction grouped with a placement that does not
// fit is rolled back with it.
func TestPlanPartIsAtomic(t *testing.T) {
	h := planFixture(t)
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{Capacity: 2000})}})
	before := stateHash(t, h.fsm)
	part := PlanPart{Updates: []BundleUpdate{
		{BundleID: "a", Release: []SlotJob{{Slot: 0, Job: "j"}}, Preemptor: "b"},
		{BundleID: "b", Place: []Place{{Slot: 0, Job: "j", Node: "n1", Grant: ledger.Grant{Capacity: 5000}}}},
	}}
	pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{part}}).Value.(*PlanResult)
	if len(pr.Rejected) != 1 {
		t.Fatalf("want rejection, got %+v", pr)
	}
	if stateHash(t, h.fsm) != before {
		t.Fatal("eviction of a rejected part leaked into state")
	}
	// The same eviction with a fitting placement commits both.
	part.Updates[1].Place[0].Grant = ledger.Grant{Capacity: 3000}
	pr = h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{part}}).Value.(*PlanResult)
	if len(pr.Committed) != 1 {
		t.Fatalf("want commit, got %+v", pr)
	}
	st := h.fsm.State()
	if st.Bundle("a").State != StatePending || st.Bundle("b").State != StatePlaced {
		t.Fatalf("states a=%s b=%s", st.Bundle("a").State, st.Bundle("b").State)
	}
	evicted := false
	for _, e := range st.Events(0, 0) {
		evicted = evicted || (e.Type == "evicted" && e.BundleID == "a" && strings.Contains(e.Message, "b"))
	}
	if !evicted {
		t.Fatal("no eviction event naming the preemptor")
	}
	checkInvariants(t, h.fsm)
}
