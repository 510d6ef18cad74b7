package fsm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amserver/amserver/ledger"
)

// A lazy node service (DESIGN §2.5) starts on a node only when a bundle
// placed there consumes a capability it provides. For placement to put such
// a bundle there, the node must already show the capability: the leader
// offers a lazy service's capabilities on every node it may run on
// (Node.Provided, as a running eager service's), starts the service where a
// consumer lands, and stops it where the last consumer left, keeping the
// offer. Its requirements are charged while it runs, like an eager one's.

// applyServiceOffer offers or withdraws services' capabilities. An offer
// that no longer holds (the node left the service's pools, is not
// placeable, fails its constraints) is refused as a whole: the leader
// plans again from the new state.
func (f *FSM) applyServiceOffer(t *tx, req *ServiceOfferRequest) (any, error) {
	t.eval = f.eval
	if len(req.Offers) > 100_000 {
		return nil, fmt.Errorf("%w: %d offers in one command", ErrInvalid, len(req.Offers))
	}
	for _, o := range req.Offers {
		if o.Withdraw {
			continue
		}
		svc := t.Service(o.ServiceID)
		if svc == nil {
			return nil, fmt.Errorf("node service %s: %w", o.ServiceID, ErrNotFound)
		}
		if svc.Lifecycle != LifecycleLazy {
			return nil, fmt.Errorf("%w: node service %s is not lazy", ErrConflict, svc.ID)
		}
		if err := t.serviceFits(svc, o.Node); err != nil {
			return nil, err
		}
	}
	for _, o := range req.Offers {
		if o.Withdraw {
			t.withdrawProvided(o.Node, o.ServiceID)
			continue
		}
		t.offerProvided(o.Node, t.Service(o.ServiceID))
	}
	return nil, nil
}

// serviceFits checks the hard rules of a service on a node: it exists, is
// placeable, is in one of the service's pools, runs its runtime and meets
// its constraints (with the evaluator the FSM re-checks plans with).
func (t *tx) serviceFits(svc *NodeService, node string) error {
	n := t.State.Node(node)
	if n == nil || !n.Placeable() || !slices.Contains(svc.Pools, n.Pool) || !n.RuntimeSet().Fits(ServiceRuntimeNeed(svc)) {
		return fmt.Errorf("%w: node %s cannot run service %s", ErrConflict, node, svc.ID)
	}
	if t.eval == nil {
		return nil
	}
	for _, expr := range svc.Constraints {
		ok, err := safeEval(t.eval, expr, n)
		if err != nil || !ok {
			return fmt.Errorf("%w: node %s does not meet constraint %q of service %s", ErrConflict, node, clip(expr), svc.ID)
		}
	}
	return nil
}

// offerProvided shows svc's capabilities on node.
func (t *tx) offerProvided(node string, svc *NodeService) {
	n := t.State.Node(node)
	if n == nil || slices.EqualFunc(n.Provided[svc.ID], svc.Provides, capabilityEqual) {
		return
	}
	cp := *n
	cp.Provided = maps.Clone(n.Provided)
	if cp.Provided == nil {
		cp.Provided = map[string][]ledger.Capability{}
	}
	cp.Provided[svc.ID] = svc.Provides
	t.putNode(&cp)
}

// withdrawServiceEverywhere removes a service's capabilities from every
// node that shows them (a deleted lazy service's offers).
func (t *tx) withdrawServiceEverywhere(svc *NodeService) {
	for _, pool := range svc.Pools {
		for _, n := range t.Nodes(pool) {
			if n.Provided[svc.ID] != nil {
				t.withdrawProvided(n.ID, svc.ID)
			}
		}
	}
}

// checkServiceGrant: a service instance's grant is exactly what it asks
// (its requirements and what it consumes), so that a plan made against an
// older version of the service cannot charge the ledger the wrong amount.
func checkServiceGrant(svc *NodeService, sp ServicePlacement) error {
	g := sp.Grant
	if g.Capacity != svc.Requirements.Capacity || len(g.Cores) != svc.Requirements.Cores ||
		g.MemoryMiB != svc.Requirements.MemoryMiB || g.GPU != nil || len(g.ExclusiveGPUs) > 0 {
		return fmt.Errorf("%w: the grant of service %s on node %s does not match its requirements", ErrConflict, svc.ID, sp.Node)
	}
	var want int64
	for _, c := range svc.Consumes {
		want += c.Count
	}
	var got int64
	for _, c := range g.Capabilities {
		got += c.Count
	}
	if got != want {
		return fmt.Errorf("%w: the grant of service %s on node %s does not match what it consumes", ErrConflict, svc.ID, sp.Node)
	}
	return nil
}
