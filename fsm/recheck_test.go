package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// labelEval stands in for CEL: "label:k=v" holds when the node's label k is
// v; "fail" is an evaluation error.
type labelEval struct{}

func (labelEval) Eval(expr string, n *Node) (bool, error) {
	if expr == "fail" {
		return false, errors.New("no such label")
	}
	k, v, _ := strings.Cut(strings.TrimPrefix(expr, "label:"), "=")
	return n.Labels[k] == v, nil
}

// recheckFixture: pool p (tiers for clouds c1 and c2), nodes n1 (az1), n2
// (az2), n3 (az1), all in cloud c1, and n4 in cloud c9 (no tier).
func recheckFixture(t *testing.T) *harness {
	h := &harness{t: t, fsm: New(Config{Eval: labelEval{}})}
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p", Tiers: []Tier{{Name: "a", Cloud: "c1"}, {Name: "b", Cloud: "c2"}}}})
	for _, n := range []Node{
		testNode("n1", "p", "az1", "c1", 8000, 8), testNode("n2", "p", "az2", "c1", 8000, 8),
		testNode("n3", "p", "az1", "c1", 8000, 8), testNode("n4", "p", "az1", "c9", 8000, 8),
	} {
		h.readyNode(n)
	}
	return h
}

func jobOn(slot int, job, node string) Place {
	return Place{Slot: slot, Job: job, Node: node, Grant: ledger.Grant{Capacity: 100}}
}

func upd(id string, places ...Place) BundleUpdate { return BundleUpdate{BundleID: id, Place: places} }

type recheckCase struct {
	name  string
	setup func(h *harness)
	spec  BundleSpec
	bad   BundleUpdate // rejected, naming check
	check string
	good  BundleUpdate // the same bundle placed so that it commits
}

func twoJobs(edit func(a, b *Job)) BundleSpec {
	a, b := testJob("a", 100, 0), testJob("b", 100, 0)
	if edit != nil {
		edit(&a, &b)
	}
	return testBundle("x", "p", a, b)
}

func recheckCases() []recheckCase {
	taint := func(h *harness) {
		n := testNode("n1", "p", "az1", "c1", 8000, 8)
		n.Taints = []string{"gpu-only"}
		h.ok(RegisterNodeType, &RegisterNodeRequest{Node: n})
	}
	constrained := twoJobs(func(a, _ *Job) { a.EditRules().Constraints = []string{"label:az=az2"} })
	forbidAz := twoJobs(nil)
	forbidAz.Resilience = &Resilience{SameNode: Forbid, SameAz: Forbid, SameCloud: Allow}
	degraded := upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1"), jobOn(1, "a", "n3"), jobOn(1, "b", "n3"))
	degraded.SetDegradations, degraded.Degradations = true, []Degradation{{Code: DegradeBackupSameAz}}
	return []recheckCase{
		{"taint not tolerated", taint, twoJobs(nil),
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n2")), "taints",
			upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n3"))},
		{"taint tolerated", taint, twoJobs(func(a, _ *Job) { a.EditRules().Tolerations = []string{"gpu-only"} }),
			upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n1")), "taints",
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n2"))},
		{"constraint false", nil, constrained,
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1")), "constraints",
			upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n1"))},
		{"constraint fails to evaluate", nil, twoJobs(func(a, _ *Job) { a.EditRules().Constraints = []string{"fail"} }),
			upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n1")), "constraints",
			upd("x", jobOn(0, "b", "n1"))},
		{"cloud in no tier", nil, twoJobs(nil),
			upd("x", jobOn(0, "a", "n4"), jobOn(0, "b", "n1")), "pool",
			upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n1"))},
		{"coLocateWith split", nil, twoJobs(func(a, _ *Job) { a.CoLocateWith = []string{"b"} }),
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n2")), "coLocateWith",
			upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n2"))},
		{"sameNodeDefault split", nil, func() BundleSpec {
			s := twoJobs(nil)
			s.Placement.SameNodeDefault = true
			return s
		}(),
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n3")), "coLocateWith",
			upd("x", jobOn(0, "a", "n3"), jobOn(0, "b", "n3"))},
		{"separateFrom shared", nil, twoJobs(func(_, b *Job) { b.SeparateFrom = []string{"a"} }),
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1")), "separateFrom",
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n3"))},
		{"sameAz hard spans", nil, func() BundleSpec {
			s := twoJobs(nil)
			s.Placement.SameAz = SameAzHard
			return s
		}(),
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n2")), "sameAz",
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n3"))},
		{"backup shares a forbidden az unrecorded", nil, forbidAz,
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1"), jobOn(1, "a", "n3"), jobOn(1, "b", "n3")), "antiAffinity",
			degraded},
		{"backup shares a forbidden node unrecorded", nil, forbidAz,
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1"), jobOn(1, "a", "n1"), jobOn(1, "b", "n2")), "antiAffinity",
			upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1"), jobOn(1, "a", "n2"), jobOn(1, "b", "n2"))},
	}
}

// TestPlanRecheckHardRules: each hard rule a placement depends on is
// re-checked when the plan applies; a part that breaks one is rejected
// whole, with the rule named, and changes nothing; the same bundle placed
// within the rule commits.
func TestPlanRecheckHardRules(t *testing.T) {
	for _, tc := range recheckCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := recheckFixture(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: tc.spec})
			before := stateHash(t, h.fsm)
			pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{tc.bad}}}}).Value.(*PlanResult)
			if len(pr.Committed) != 0 || len(pr.Rejected) != 1 || pr.Rejected[0].Check != tc.check {
				t.Fatalf("want the part rejected by %s, got %+v", tc.check, pr)
			}
			if stateHash(t, h.fsm) != before {
				t.Fatal("a rejected part changed state")
			}
			pr = h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{tc.good}}}}).Value.(*PlanResult)
			if len(pr.Committed) != 1 {
				t.Fatalf("the good placement was rejected: %+v", pr.Rejected)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestPlanRecheckGangAcrossUpdates: a part whose second update breaks a rule
// commits nothing of its first (a preemptor and its victims, or a gang).
func TestPlanRecheckGangAcrossUpdates(t *testing.T) {
	h := recheckFixture(t)
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("y", "p", testJob("a", 100, 0))})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: twoJobs(func(_, b *Job) { b.SeparateFrom = []string{"a"} })})
	before := stateHash(t, h.fsm)
	part := PlanPart{Updates: []BundleUpdate{upd("y", jobOn(0, "a", "n1")), upd("x", jobOn(0, "a", "n2"), jobOn(0, "b", "n2"))}}
	pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{part}}).Value.(*PlanResult)
	if len(pr.Rejected) != 1 || pr.Rejected[0].Check != "separateFrom" || pr.Rejected[0].BundleID != "x" {
		t.Fatalf("want the part rejected by separateFrom on x, got %+v", pr)
	}
	if stateHash(t, h.fsm) != before {
		t.Fatal("the first update of a rejected part committed")
	}
}

// TestPlanRecheckPinnedSurvivors: a repair that re-places a lost job must
// keep it with the survivors of its group (they pin it).
func TestPlanRecheckPinnedSurvivors(t *testing.T) {
	h := recheckFixture(t)
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: twoJobs(func(a, _ *Job) { a.CoLocateWith = []string{"b"} })})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n1"))}}}})
	move := upd("x", jobOn(0, "b", "n2"))
	move.Release = []SlotJob{{Slot: 0, Job: "b"}}
	pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{move}}}}).Value.(*PlanResult)
	if len(pr.Rejected) != 1 || pr.Rejected[0].Check != "coLocateWith" {
		t.Fatalf("want coLocateWith rejection, got %+v", pr)
	}
}

// TestPlanRecheckMatchedResources: a node re-registered with the same
// counts but other capability attributes or GPU models no longer serves a
// job that asked for them; a stale grant on it must be rejected, not booked
// on a device or capability the job did not ask for (found by
// TestPropStalePlanRecheck in the scheduler package).
func TestPlanRecheckMatchedResources(t *testing.T) {
	nic := ledger.CapabilityRequest{Name: "nic", Count: 1, AttributeMatches: map[string]string{"speed": "25g"}}
	cases := []struct {
		name   string
		req    ledger.Request
		grant  ledger.Grant
		change func(n *Node)
	}{
		{"capability attribute changed", ledger.Request{Capabilities: []ledger.CapabilityRequest{nic}},
			ledger.Grant{Capabilities: []ledger.CapabilityCount{{Name: "nic", Count: 1}}},
			func(n *Node) { n.Capabilities[0].Attributes = map[string]string{"speed": "10g"} }},
		{"gpu share of another model", ledger.Request{GPUCapacity: 500, GPUModel: "t4"},
			ledger.Grant{GPU: &ledger.GPUShare{Index: 0, Capacity: 500}},
			func(n *Node) { n.GPUs[0].Model = "a100" }},
		{"exclusive gpu of another model", ledger.Request{ExclusiveGPUs: 1, GPUModel: "t4"},
			ledger.Grant{ExclusiveGPUs: []int{0}},
			func(n *Node) { n.GPUs[0].Model = "a100" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := recheckFixture(t)
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("x", "p", Job{Name: "a", Requirements: tc.req})})
			stale := PlanPart{Updates: []BundleUpdate{upd("x", Place{Slot: 0, Job: "a", Node: "n1", Grant: tc.grant})}}
			n := testNode("n1", "p", "az1", "c1", 8000, 8)
			tc.change(&n)
			h.ok(RegisterNodeType, &RegisterNodeRequest{Node: n})
			pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{stale}}).Value.(*PlanResult)
			if len(pr.Committed) != 0 || len(pr.Rejected) != 1 {
				t.Fatalf("a grant the node no longer serves was committed: %+v", pr)
			}
		})
	}
}

// TestPlanRecheckPartialBackup: a repair that re-places a primary's lost
// job but cannot complete the backup records noBackup; what is left of the
// backup may share the primary's nodes (found by the leader's placement
// property, where a failover did exactly this).
func TestPlanRecheckPartialBackup(t *testing.T) {
	h := recheckFixture(t)
	spec := twoJobs(func(a, _ *Job) { a.SeparateFrom = []string{"b"} })
	spec.Resilience = &Resilience{SameNode: Forbid, SameAz: Allow, SameCloud: Allow}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	first := upd("x", jobOn(0, "a", "n1"), jobOn(0, "b", "n2"), jobOn(1, "a", "n2"), jobOn(1, "b", "n1"))
	first.SetDegradations, first.Degradations = true, []Degradation{{Code: DegradeBackupSameNode}}
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{first}}}})
	h.ok(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeDown})
	repair := upd("x", jobOn(0, "a", "n3"))
	repair.Release = []SlotJob{{Slot: 0, Job: "a"}, {Slot: 1, Job: "b"}}
	repair.SetDegradations, repair.Degradations = true, []Degradation{{Code: DegradeNoBackup}}
	pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{repair}}}}).Value.(*PlanResult)
	if len(pr.Committed) != 1 {
		t.Fatalf("the repair was rejected: %+v", pr.Rejected)
	}
}
