package leader

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// services keeps node services where they belong (DESIGN §2.5): an eager
// service on every placeable node of its pools that meets its constraints
// and can give what it asks (requirements and consumes), like a DaemonSet;
// a lazy one offered on those nodes and started only where a bundle
// consumes a capability it provides, stopped where the last one left. It
// stops instances on nodes that went down, left, or no longer qualify.
type services struct {
	l *Leader
}

func (d *services) Name() string { return "node-services" }

func (d *services) Run(ctx context.Context) {
	for {
		watch := d.l.store.WatchCh()
		began := time.Now()
		d.pass(ctx)
		if !waitPaced(ctx, watch, 10*time.Second, began) {
			return
		}
	}
}

// pass offers and withdraws lazy services' capabilities, then places and
// stops instances, each from the state the step before left.
func (d *services) pass(ctx context.Context) {
	ev := d.l.engine.ExprChecker()
	if offers := serviceOffers(d.l.store.State(), ev); len(offers) > 0 {
		d.l.applyLogged(ctx, fsm.ServiceOfferType, &fsm.ServiceOfferRequest{Offers: offers})
	}
	if plan := servicePlan(d.l.store.State(), d.l.clock.Now().UnixNano(), ev); plan != nil {
		d.l.applyLogged(ctx, fsm.ApplyPlanType, plan)
	}
}

// servicePlan places missing service instances and stops those that no
// longer belong (a new one only once its worker reported the one it
// replaces stopped); each instance is its own plan part so one misfit blocks
// nothing. Instances fit against what the plan's earlier parts already
// take of a node: fitted against the node alone, two services sharing a
// node's capabilities were both proposed, and the FSM rejected the second
// on every pass.
func servicePlan(st *fsm.State, now int64, ev fsm.ExprEvaluator) *fsm.Plan {
	plan := &fsm.Plan{Now: now}
	used := map[string]ledger.Usage{} // nodes' usage with this plan's grants
	for _, svc := range st.Services() {
		running := map[string]bool{} // nodes with an instance, or one still stopping
		for _, a := range st.ServiceAssignments(svc.ID) {
			if a.Desired != fsm.DesiredRun {
				// A new instance would take the stopping one's id: placed
				// before its worker stopped it, the old process (its old
				// grant, at the same generation) would run on as the new.
				running[a.NodeID] = a.Status != fsm.JobStopped && a.Status != fsm.JobFailed
				continue
			}
			running[a.NodeID] = true
			if !keepService(st, svc, a.NodeID, ev) {
				plan.Parts = append(plan.Parts, fsm.PlanPart{Services: []fsm.ServicePlacement{{ServiceID: svc.ID, Node: a.NodeID, Stop: true}}})
			}
		}
		for _, pool := range svc.Pools {
			for _, n := range st.Nodes(pool) {
				if running[n.ID] || !serviceCanRun(svc, n, ev) || (svc.Lifecycle == fsm.LifecycleLazy && !consumed(st, svc, n.ID)) {
					continue
				}
				u, ok := used[n.ID]
				if !ok {
					u = n.Usage
				}
				g, err := ledger.Fit(n.Inventory(), u, svc.Request())
				if err != nil {
					continue // this node cannot host the service now: not an error
				}
				used[n.ID], running[n.ID] = u.Add(g), true
				plan.Parts = append(plan.Parts, fsm.PlanPart{Services: []fsm.ServicePlacement{{ServiceID: svc.ID, Node: n.ID, Grant: g}}})
			}
		}
	}
	if len(plan.Parts) == 0 {
		return nil
	}
	return plan
}

// keepService: an instance stays while its node is up, in the service's
// pools and meets its constraints, and, for a lazy service, while a bundle
// there consumes what it provides. A cordoned or suspect node keeps it.
func keepService(st *fsm.State, svc *fsm.NodeService, node string, ev fsm.ExprEvaluator) bool {
	n := st.Node(node)
	if n == nil || n.Status == fsm.NodeDown || n.Status == fsm.NodeLeft || !slices.Contains(svc.Pools, n.Pool) || !meets(svc, n, ev) {
		return false
	}
	return svc.Lifecycle != fsm.LifecycleLazy || consumed(st, svc, node)
}

// serviceCanRun: the hard rules of a new instance on n.
func serviceCanRun(svc *fsm.NodeService, n *fsm.Node, ev fsm.ExprEvaluator) bool {
	return n.Placeable() && n.RuntimeSet().Fits(fsm.ServiceRuntimeNeed(svc)) && meets(svc, n, ev)
}

// meets evaluates the service's constraints against the node; an
// expression that fails to evaluate does not hold.
func meets(svc *fsm.NodeService, n *fsm.Node, ev fsm.ExprEvaluator) bool {
	for _, expr := range svc.Constraints {
		if ok, err := ev.Eval(expr, n); err != nil || !ok {
			return false
		}
	}
	return true
}

// consumed: a bundle's job running (or to run) on node holds a capability
// the service provides.
func consumed(st *fsm.State, svc *fsm.NodeService, node string) bool {
	for _, a := range st.NodeAssignments(node) {
		if a.ServiceID != "" || a.Desired != fsm.DesiredRun {
			continue
		}
		for _, c := range a.Grant.Capabilities {
			if slices.ContainsFunc(svc.Provides, func(p ledger.Capability) bool { return p.Name == c.Name }) {
				return true
			}
		}
	}
	return false
}

// serviceOffers says where services' capabilities must be shown or
// withdrawn: a lazy service's on every node it could start on (it runs
// there, or it may run there and its requirements fit now), and nowhere
// else; an eager service's only where it runs (the FSM adds them when the
// instance reports running), so an offer left from a lazy past is withdrawn.
func serviceOffers(st *fsm.State, ev fsm.ExprEvaluator) []fsm.ServiceOffer {
	var out []fsm.ServiceOffer
	svcs := st.Services()
	byID := make(map[string]*fsm.NodeService, len(svcs))
	runs := map[string]map[string]bool{} // node → services running there
	for _, svc := range svcs {
		byID[svc.ID] = svc
		for _, a := range st.ServiceAssignments(svc.ID) {
			if a.Desired != fsm.DesiredRun {
				continue
			}
			if runs[a.NodeID] == nil {
				runs[a.NodeID] = map[string]bool{}
			}
			runs[a.NodeID][svc.ID] = true
		}
	}
	for _, n := range st.Nodes("") {
		if len(svcs) == 0 && len(n.Provided) == 0 {
			continue // nothing to offer here, nor to withdraw
		}
		out = append(out, nodeOffers(st, n, svcs, runs[n.ID], ev)...)
		for id := range n.Provided {
			if byID[id] == nil { // the service was deleted
				out = append(out, fsm.ServiceOffer{ServiceID: id, Node: n.ID, Withdraw: true})
			}
		}
	}
	slices.SortFunc(out, func(a, b fsm.ServiceOffer) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.ServiceID, b.ServiceID))
	})
	return out
}

// nodeOffers is serviceOffers for the existing services on one node, runs
// naming those with an instance to run there. The running instances come
// from the services' own assignments: walking every node's assignments on
// every pass took a third of the cluster suite's CPU at 5,000 nodes.
func nodeOffers(st *fsm.State, n *fsm.Node, svcs []*fsm.NodeService, runs map[string]bool, ev fsm.ExprEvaluator) []fsm.ServiceOffer {
	var out []fsm.ServiceOffer
	for _, svc := range svcs {
		offered := n.Provided[svc.ID] != nil
		if svc.Lifecycle != fsm.LifecycleLazy {
			if offered && !runs[svc.ID] {
				out = append(out, fsm.ServiceOffer{ServiceID: svc.ID, Node: n.ID, Withdraw: true})
			}
			continue
		}
		// While a bundle there holds what it provides the offer stays,
		// even if the service cannot start (a placement must not lose
		// its capability because its own job took the room).
		want := slices.Contains(svc.Pools, n.Pool) && (runs[svc.ID] || consumed(st, svc, n.ID) || mayStart(svc, n, ev))
		switch {
		case want && !slices.EqualFunc(n.Provided[svc.ID], svc.Provides, sameCapability):
			out = append(out, fsm.ServiceOffer{ServiceID: svc.ID, Node: n.ID})
		case !want && offered && !runs[svc.ID]:
			out = append(out, fsm.ServiceOffer{ServiceID: svc.ID, Node: n.ID, Withdraw: true})
		}
	}
	return out
}

// mayStart: a new lazy instance could start on n now.
func mayStart(svc *fsm.NodeService, n *fsm.Node, ev fsm.ExprEvaluator) bool {
	if !serviceCanRun(svc, n, ev) {
		return false
	}
	_, err := ledger.Fit(n.Inventory(), n.Usage, svc.Request())
	return err == nil
}

func sameCapability(a, b ledger.Capability) bool {
	if a.Name != b.Name || a.Count != b.Count || len(a.Attributes) != len(b.Attributes) {
		return false
	}
	for k, v := range a.Attributes {
		if b.Attributes[k] != v {
			return false
		}
	}
	return true
}
