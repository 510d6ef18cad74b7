package scheduler

import (
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestPlacementSeesNodeServices: placement sees a node service's charged
// requirements (a job that would fit the bare node, by capacity or by
// memory, does not fit beside the service) and a lazy service's offered capability (a consumer lands only
// where it is offered); the plan commits through the FSM's re-check.
func TestPlacementSeesNodeServices(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for _, id := range []string{"n1", "n2", "n3"} {
		n := mkNode(id, "p", "az-"+id, "x", 4000, 4)
		n.TotalMemoryMiB = 8192
		c.node(n)
	}
	c.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: fsm.NodeService{ID: "agent", Pools: []string{"p"},
		Requirements: fsm.ServiceRequirements{Capacity: 2000, Cores: 1, MemoryMiB: 6144}}})
	c.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: fsm.NodeService{ID: "cache", Pools: []string{"p"},
		Lifecycle: fsm.LifecycleLazy, Provides: []ledger.Capability{{Name: "cache", Count: 1}}}})
	for _, id := range []string{"n1", "n2"} { // the agent runs on n1 and n2
		n := c.state().Node(id)
		g, err := ledger.Fit(n.Inventory(), n.Usage, ledger.Request{Capacity: 2000, Cores: 1, MemoryMiB: 6144})
		if err != nil {
			t.Fatal(err)
		}
		c.commit(&fsm.Plan{Parts: []fsm.PlanPart{{Services: []fsm.ServicePlacement{{ServiceID: "agent", Node: id, Grant: g}}}}})
	}
	c.ok(fsm.ServiceOfferType, &fsm.ServiceOfferRequest{Offers: []fsm.ServiceOffer{{ServiceID: "cache", Node: "n2"}}})

	cases := []struct {
		name string
		job  fsm.Job
		want string // the node, "" for unplaceable
	}{
		{"3 units fit only the node without the agent", mkJob("big", 3000, 0), "n3"},
		{"the consumer goes where the cache is offered", fsm.Job{Name: "c", Requirements: ledger.Request{Capacity: 1000,
			Capabilities: []ledger.CapabilityRequest{{Name: "cache", Count: 1}}}}, "n2"},
		{"3 units and the cache fit nowhere", fsm.Job{Name: "c", Requirements: ledger.Request{Capacity: 3000,
			Capabilities: []ledger.CapabilityRequest{{Name: "cache", Count: 1}}}}, ""},
		{"4 GiB fit only beside no agent (it holds 6 of 8)", fsm.Job{Name: "m", Requirements: ledger.Request{Capacity: 500, MemoryMiB: 4096}}, "n3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{tc.job}}
			b, _ := DryRun(c.state(), spec, 7)
			got := ""
			if len(b.Replicas) > 0 && b.Replicas[0].Complete() {
				got = b.Replicas[0].Jobs[0].NodeID
			}
			if got != tc.want {
				t.Fatalf("placed on %q (state %s), want %q", got, b.State, tc.want)
			}
		})
	}
	b := c.bundle(fsm.BundleSpec{ID: "user", Pool: "p", Jobs: []fsm.Job{cases[1].job}})
	plan, _ := PlaceBatch(c.state(), []*fsm.Bundle{b}, 7, 0)
	c.commit(plan)
	if n := c.state().Bundle("user").Replicas[0].Jobs[0].NodeID; n != "n2" {
		t.Fatalf("committed on %s", n)
	}
	checkInvariants(t, c.state())
}
