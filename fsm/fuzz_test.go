package fsm

import (
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/ledger"
)

// fuzzFixture is a small populated state every fuzz input is applied to.
func fuzzFixture(t testingT) *harness {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.readyNode(testNode("n2", "p", "az2", "c2", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1000, 1))
	spec.Resilience = &Resilience{SameNode: Forbid}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b2", "p", testJob("x", 500, 0))})
	h.push("web", composeTar(t, 1))
	return h
}

// FuzzApply: arbitrary bytes never panic a replica except with the documented
// UndecodableError; a command that fails leaves the state exactly as it was;
// one that succeeds keeps every ledger invariant.
func FuzzApply(f *testing.F) {
	seeds := []struct {
		typ  MessageType
		body any
	}{
		{RegisterNodeType, &RegisterNodeRequest{Node: testNode("n3", "p", "az1", "c1", 1000, 1)}},
		{RegisterNodeType, &RegisterNodeRequest{Node: testNode("n1", "p", "az1", "c1", 10, 0)}},
		{NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeDown}},
		{NodeCordonType, &NodeFlagRequest{NodeID: "n2", On: true}},
		{CreateBundleType, &CreateBundleRequest{Spec: testBundle("b3", "p", testJob("j", -1, 0))}},
		{ReplaceBundleType, &ReplaceBundleRequest{Spec: testBundle("b1", "p", testJob("enc", 1, 0)), CAS: 3}},
		{DeleteBundleType, &DeleteBundleRequest{ID: "b1"}},
		{PurgeBundleType, &PurgeBundleRequest{ID: "b1"}},
		{ApplyPlanType, &Plan{Parts: []PlanPart{place("b2", 0, "n2", ledger.Grant{Capacity: 500, Cores: []int{3}})}}},
		{ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{{BundleID: "b1", Promote: true}}}}}},
		{ApplyPlanType, &Plan{Parts: []PlanPart{place("b2", 0, "n2", ledger.Grant{GPU: &ledger.GPUShare{Index: 7, Capacity: -1}})}}},
		{AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: "b1:0:enc@n1", Status: JobRunning}},
		{UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p", Caps: ledger.PoolCaps{MaxCapacity: 1}}}},
		{UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p", CapGroup: "g"}}},
		{SetCapsType, &SetCapsRequest{Caps: ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 1}}}},
		{SetCapsType, &SetCapsRequest{Caps: ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCores: 1}, "": {MaxCores: -1}}}}},
		{UpsertServiceType, &UpsertServiceRequest{Service: NodeService{ID: "s", Pools: []string{"p"}}}},
		{TimerType, &TimerRequest{Now: 5, Start: []string{"b1"}, Stop: []string{"b2"}}},
		{UpsertACLTokenType, &UpsertACLTokenRequest{Token: ACLToken{AccessorID: "a", SecretHash: hashA, Kind: ACLWorker, NodeID: "n1"}}},
		{DeleteACLTokenType, &DeleteACLTokenRequest{AccessorID: "a"}},
		{PutTemplateType, putReq(f, "web", composeTar(f, 1))},
		{PutTemplateType, &PutTemplateRequest{Name: "web", Digest: valDigest(1), Runtime: "wasm", Files: 1, Archive: []byte("x")}},
		{DeleteTemplateType, &DeleteTemplateRequest{Name: "web"}},
		{CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b3", "web")}},
		{CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b3", "web@"+valDigest(2))}},
	}
	for _, s := range seeds {
		f.Add(mustEncode(f, s.typ, s.body))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fuzzFixture(t)
		before := stateHash(t, h.fsm)
		res, panicked := applyRecovering(t, h.fsm, &raft.Log{Index: 100, Type: raft.LogCommand, Data: data})
		if panicked {
			if stateHash(t, h.fsm) != before {
				t.Fatal("an undecodable command changed state")
			}
			return
		}
		if res.Err != nil && stateHash(t, h.fsm) != before {
			t.Fatalf("failed command (%v) changed state", res.Err)
		}
		checkInvariants(t, h.fsm)
	})
}

func applyRecovering(t *testing.T, f *FSM, l *raft.Log) (res *Result, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*UndecodableError); !ok {
				t.Fatalf("panic other than UndecodableError: %v", r)
			}
			panicked = true
		}
	}()
	out := f.Apply(l)
	res, _ = out.(*Result)
	if res == nil {
		t.Fatalf("Apply returned %T", out)
	}
	return res, false
}
