package leader

import (
	"context"
	"slices"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// services keeps every eager node service on every placeable node of its
// pools that can satisfy what it consumes (like a DaemonSet, DESIGN §2.5),
// and stops it on nodes that went down or left.
type services struct {
	l *Leader
}

func (d *services) Name() string { return "node-services" }

func (d *services) Run(ctx context.Context) {
	for {
		watch := d.l.store.WatchCh()
		d.pass(ctx)
		if !waitChange(ctx, watch, 10*time.Second) {
			return
		}
	}
}

// pass places and stops node services as the state asks, in one plan.
func (d *services) pass(ctx context.Context) {
	if plan := servicePlan(d.l.store.State(), d.l.clock.Now().UnixNano()); plan != nil {
		d.l.applyLogged(ctx, fsm.ApplyPlanType, plan)
	}
}

// servicePlan places missing service instances and stops those on lost
// nodes; each instance is its own plan part so one misfit blocks nothing.
// Instances fit against what the plan's earlier parts already take of a
// node: fitted against the node alone, two services sharing a node's
// capabilities were both proposed, and the FSM rejected the second on
// every pass.
func servicePlan(st *fsm.State, now int64) *fsm.Plan {
	plan := &fsm.Plan{Now: now}
	used := map[string]ledger.Usage{} // nodes' usage with this plan's grants
	for _, svc := range st.Services() {
		running := map[string]bool{}
		for _, a := range st.ServiceAssignments(svc.ID) {
			if a.Desired != fsm.DesiredRun {
				continue
			}
			running[a.NodeID] = true
			if n := st.Node(a.NodeID); n == nil || n.Status == fsm.NodeDown || n.Status == fsm.NodeLeft || !slices.Contains(svc.Pools, n.Pool) {
				plan.Parts = append(plan.Parts, fsm.PlanPart{Services: []fsm.ServicePlacement{{ServiceID: svc.ID, Node: a.NodeID, Stop: true}}})
			}
		}
		need := fsm.ServiceRuntimeNeed(svc)
		for _, pool := range svc.Pools {
			for _, n := range st.Nodes(pool) {
				if running[n.ID] || !n.Placeable() || !n.RuntimeSet().Fits(need) {
					continue
				}
				u, ok := used[n.ID]
				if !ok {
					u = n.Usage
				}
				g, err := ledger.Fit(n.Inventory(), u, ledger.Request{Capabilities: svc.Consumes})
				if err != nil {
					continue // this node cannot host the service: not an error
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
