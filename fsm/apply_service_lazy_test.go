package fsm

import (
	"errors"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// lazyHarness: nodes n1 (cache=ok) and n2 (cache=no), and a lazy service
// cache constrained to cache=ok (labelEval, recheck_test.go).
func lazyHarness(t *testing.T) *harness {
	h := &harness{t: t, fsm: New(Config{Eval: labelEval{}})}
	for _, id := range []string{"n1", "n2"} {
		n := testNode(id, "p", "az1", "c1", 4000, 4)
		n.Labels["cache"] = map[string]string{"n1": "ok", "n2": "no"}[id]
		h.readyNode(n)
	}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: NodeService{ID: "cache", Pools: []string{"p"}, Lifecycle: LifecycleLazy,
		Constraints: []string{"label:cache=ok"}, Requirements: ServiceRequirements{Capacity: 500, Cores: 1},
		Provides: []ledger.Capability{{Name: "cache", Count: 2}}}})
	return h
}

func hasCapability(st *State, node, name string) bool {
	return capabilityIndex(st.Node(node).Inventory().Capabilities, name) >= 0
}

// TestServiceOffers: an offer shows a lazy service's capabilities on a
// node that meets its rules, and only there; only lazy services are
// offered; a withdrawal removes the offer.
func TestServiceOffers(t *testing.T) {
	h := lazyHarness(t)
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: NodeService{ID: "eager", Pools: []string{"p"},
		Provides: []ledger.Capability{{Name: "x", Count: 1}}}})
	cases := []struct {
		name  string
		offer ServiceOffer
		err   error
	}{
		{"unknown service", ServiceOffer{ServiceID: "ghost", Node: "n1"}, ErrNotFound},
		{"eager service", ServiceOffer{ServiceID: "eager", Node: "n1"}, ErrConflict},
		{"constraint fails", ServiceOffer{ServiceID: "cache", Node: "n2"}, ErrConflict},
		{"unknown node", ServiceOffer{ServiceID: "cache", Node: "n9"}, ErrConflict},
	}
	for _, tc := range cases {
		before := stateHash(t, h.fsm)
		res := h.apply(ServiceOfferType, &ServiceOfferRequest{Offers: []ServiceOffer{{ServiceID: "cache", Node: "n1"}, tc.offer}})
		if !errors.Is(res.Err, tc.err) || stateHash(t, h.fsm) != before {
			t.Fatalf("%s: %v, want %v and no change", tc.name, res.Err, tc.err)
		}
	}
	h.ok(ServiceOfferType, &ServiceOfferRequest{Offers: []ServiceOffer{{ServiceID: "cache", Node: "n1"}}})
	st := h.fsm.State()
	if !hasCapability(st, "n1", "cache") || hasCapability(st, "n2", "cache") {
		t.Fatal("the offer must show the capability on n1 only")
	}
	if u := st.Node("n1").Usage; u.Capacity != 0 {
		t.Fatalf("an offer charged %+v", u)
	}
	h.ok(ServiceOfferType, &ServiceOfferRequest{Offers: []ServiceOffer{{ServiceID: "cache", Node: "n1", Withdraw: true}}})
	if hasCapability(h.fsm.State(), "n1", "cache") {
		t.Fatal("withdrawn offer still shown")
	}
}

// TestLazyServiceLifecycleInFSM: a consumer is placed against the offer;
// the instance is charged its requirements, and a grant that does not
// match them is refused; a stop keeps the offer (and the consumer's
// reservation), the stopped report too; a failure withdraws it, and the
// consumer loses its reservation; deleting the service withdraws offers.
func TestLazyServiceLifecycleInFSM(t *testing.T) {
	h := lazyHarness(t)
	h.ok(ServiceOfferType, &ServiceOfferRequest{Offers: []ServiceOffer{{ServiceID: "cache", Node: "n1"}}})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", Job{Name: "j", Requirements: ledger.Request{
		Capacity: 1000, Capabilities: []ledger.CapabilityRequest{{Name: "cache", Count: 1}}}})})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})

	wrong := ServicePlacement{ServiceID: "cache", Node: "n1", Grant: ledger.Grant{Capacity: 100}}
	if pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{wrong}}}}).Value.(*PlanResult); len(pr.Rejected) != 1 {
		t.Fatalf("a grant below the requirements was accepted: %+v", pr)
	}
	n1 := h.fsm.State().Node("n1")
	g, err := ledger.Fit(n1.Inventory(), n1.Usage, ledger.Request{Capacity: 500, Cores: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := ServicePlacement{ServiceID: "cache", Node: "n1", Grant: g}
	if pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{start}}}}).Value.(*PlanResult); len(pr.Rejected) != 0 {
		t.Fatalf("start rejected: %+v", pr.Rejected)
	}
	if u := h.fsm.State().Node("n1").Usage; u.Capacity != 1500 || len(u.Cores) != 1 {
		t.Fatalf("n1 usage %+v, want the job's 1 and the service's 0.5 with a core", u)
	}
	id := serviceAssignmentID("cache", "n1")
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobRunning})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{{ServiceID: "cache", Node: "n1", Stop: true}}}}})
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobStopped})
	st := h.fsm.State()
	if !hasCapability(st, "n1", "cache") || st.Bundle("b1").State != StatePlaced {
		t.Fatalf("a stopped lazy service must keep its offer: bundle %s", st.Bundle("b1").State)
	}
	checkInvariants(t, h.fsm)

	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{start}}}})
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobFailed})
	st = h.fsm.State()
	if hasCapability(st, "n1", "cache") || st.Bundle("b1").State != StatePending {
		t.Fatalf("a failed lazy service must lose its offer and its consumer: bundle %s", st.Bundle("b1").State)
	}
	checkInvariants(t, h.fsm)

	h.ok(ServiceOfferType, &ServiceOfferRequest{Offers: []ServiceOffer{{ServiceID: "cache", Node: "n1"}}})
	h.ok(DeleteServiceType, &DeleteServiceRequest{ID: "cache"})
	if hasCapability(h.fsm.State(), "n1", "cache") {
		t.Fatal("a deleted service's offer is still shown")
	}
	checkInvariants(t, h.fsm)
}

// TestLazyServiceSurvivesSnapshot: a service's requirements, constraints
// and lifecycle and a node's offer come back from a snapshot, over a
// non-empty FSM.
func TestLazyServiceSurvivesSnapshot(t *testing.T) {
	h := lazyHarness(t)
	h.ok(ServiceOfferType, &ServiceOfferRequest{Offers: []ServiceOffer{{ServiceID: "cache", Node: "n1"}}})
	other := lazyHarness(t)
	other.ok(DeleteServiceType, &DeleteServiceRequest{ID: "cache"})
	restoreInto(t, h.fsm, other.fsm)
	if stateHash(t, other.fsm) != stateHash(t, h.fsm) {
		t.Fatal("restored state differs")
	}
	svc := other.fsm.State().Service("cache")
	if svc == nil || svc.Lifecycle != LifecycleLazy || svc.Requirements.Capacity != 500 || svc.Requirements.Cores != 1 || len(svc.Constraints) != 1 {
		t.Fatalf("restored service %+v", svc)
	}
	if !hasCapability(other.fsm.State(), "n1", "cache") {
		t.Fatal("the offer did not survive the snapshot")
	}
}
