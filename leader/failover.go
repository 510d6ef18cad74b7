package leader

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// failover repairs bundles with jobs on nodes that are down or left
// (DESIGN §4): the healthy backup is promoted, only the lost jobs are
// re-placed, and nothing stays reserved on a lost node. Suspect nodes are
// left alone: no new placements, nothing moved.
type failover struct {
	l *Leader
}

func (f *failover) Name() string { return "failover" }

func (f *failover) Run(ctx context.Context) {
	for {
		watch := f.l.store.WatchCh()
		began := time.Now()
		f.pass(ctx)
		if !waitPaced(ctx, watch, 5*time.Second, began) {
			return
		}
	}
}

// pass repairs every bundle holding reservations on a lost node, in one
// plan, and returns how many repairs committed.
func (f *failover) pass(ctx context.Context) int {
	st := f.l.store.State()
	lost, bundles := lostPlacements(st)
	if len(bundles) == 0 {
		return 0
	}
	batch := f.l.engine.Snapshot(st).NewBatch(f.l.store.AppliedIndex())
	for _, b := range bundles {
		batch.Repair(b, lost)
	}
	// The lost nodes ride along, so that a repair whose node came back
	// while the plan was in flight is rejected, not committed (Plan.Lost).
	committed := f.l.applyBatch(ctx, batch, slices.Sorted(maps.Keys(lost))...)
	f.l.metrics.Failovers.Add(float64(committed))
	return committed
}

// lostPlacements finds the nodes that are down or left and the bundles
// holding reservations on them, most important first.
func lostPlacements(st *fsm.State) (map[string]bool, []*fsm.Bundle) {
	lost := map[string]bool{}
	seen := map[string]bool{}
	var out []*fsm.Bundle
	for _, n := range st.Nodes("") {
		if n.Status != fsm.NodeDown && n.Status != fsm.NodeLeft {
			continue
		}
		lost[n.ID] = true
		for _, r := range st.NodeReservations(n.ID) {
			if strings.HasPrefix(r.Key.Bundle, "~") || seen[r.Key.Bundle] {
				continue // node services are the services duty's
			}
			seen[r.Key.Bundle] = true
			if b := st.Bundle(r.Key.Bundle); b != nil {
				out = append(out, b)
			}
		}
	}
	sortByBand(out)
	return lost, out
}

// sortByBand orders bundles gold, silver, bronze, then by age and id.
func sortByBand(list []*fsm.Bundle) {
	slices.SortStableFunc(list, func(a, b *fsm.Bundle) int {
		if c := cmp.Compare(a.Spec.EffectiveBand(), b.Spec.EffectiveBand()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.SubmitTime, b.SubmitTime); c != 0 {
			return c
		}
		return strings.Compare(a.ID(), b.ID())
	})
}

// applyBatch commits a batch's plan and returns how many parts committed;
// lost are the nodes a failover plan treats as down or left (fsm.Plan.Lost).
func (l *Leader) applyBatch(ctx context.Context, batch *scheduler.Batch, lost ...string) int {
	committed, _ := l.commitPlan(ctx, batch, lost, nil)
	return committed
}

// commitPlan commits batch's plan with lost and the drain waits to
// announce (a plan of no parts commits only for those); it returns how
// many parts committed and whether the plan did.
func (l *Leader) commitPlan(ctx context.Context, batch *scheduler.Batch, lost []string, waits []fsm.DrainWait) (int, bool) {
	if batch.Parts() == 0 && len(waits) == 0 {
		return 0, false
	}
	plan := batch.Plan(l.clock.Now().UnixNano())
	plan.Lost, plan.DrainWaits = lost, waits
	// An older follower would not write the recount's events.
	plan.DegradedRecount = l.cfg.ServersApply(fsm.LevelRolloutSettle)
	if v, ok := batch.View().(interface{ Index(...string) uint64 }); ok {
		plan.Basis = v.Index() // failed attempts are against this state, not the commit's
	}
	res := l.applyLogged(ctx, fsm.ApplyPlanType, plan)
	if res == nil || res.Err != nil {
		return 0, false
	}
	pr, _ := res.Value.(*fsm.PlanResult)
	if pr == nil {
		return 0, false
	}
	for _, r := range pr.Rejected {
		l.log.Debug("plan part rejected at apply", "bundle", r.BundleID, "reason", r.Reason)
	}
	return len(pr.Committed), true
}
