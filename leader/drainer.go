package leader

import (
	"context"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// drainer moves every job off draining nodes (DESIGN §4): promote the
// backup first where there is one, else place-then-stop. A bundle that has
// nowhere to go stays; the next change retries it.
type drainer struct {
	l *Leader
	// stuck is what the last pass could not move, as "node/bundle" → why:
	// each is announced once (logged, and a drainWaits event in the pass's
	// plan), when it starts or its reason changes, since otherwise a drain
	// that waits for room says nothing anywhere.
	stuck map[string]string
}

func (d *drainer) Name() string { return "drain" }

func (d *drainer) Run(ctx context.Context) {
	for {
		watch := d.l.store.WatchCh()
		began := time.Now()
		d.pass(ctx)
		if !waitPaced(ctx, watch, 5*time.Second, began) {
			return
		}
	}
}

// pass moves what it can off every draining ready node, in one plan.
func (d *drainer) pass(ctx context.Context) {
	st := d.l.store.State()
	var batchNodes []*fsm.Node
	for _, n := range st.Nodes("") {
		if n.Draining && n.Status == fsm.NodeReady && n.Usage.Reservations > 0 {
			batchNodes = append(batchNodes, n)
		}
	}
	if len(batchNodes) == 0 {
		d.stuck = nil
		return
	}
	batch := d.l.engine.Snapshot(st).NewBatch(d.l.store.AppliedIndex())
	stuck := map[string]string{}
	var waits []fsm.DrainWait
	for _, n := range batchNodes {
		for _, b := range bundlesOn(st, n.ID) {
			if batch.Updated(b.ID()) {
				// Moved off another draining node in this batch: b is
				// stale, and moving its jobs from it could break its
				// rules against where the other jobs just went. Next pass.
				if why, ok := d.stuck[n.ID+"/"+b.ID()]; ok {
					stuck[n.ID+"/"+b.ID()] = why // not tried: not resolved either
				}
				continue
			}
			waits = d.note(stuck, waits, n.ID, b.ID(), batch.Drain(b, n.ID))
		}
	}
	if !d.l.cfg.ServersApply(fsm.LevelRolloutSettle) {
		waits = nil // an older server would not write the events: the log alone says it
	}
	if _, ok := d.l.commitPlan(ctx, batch, nil, waits); ok || len(waits) == 0 {
		d.stuck = stuck
		return
	}
	// The waits were not written: announce them again next pass.
	for _, w := range waits {
		delete(stuck, w.Node+"/"+w.Bundle)
	}
	d.stuck = stuck
}

// note records a bundle the pass left on the node and, when it is new or
// its reason changed, logs it and adds it to the waits to announce.
func (d *drainer) note(stuck map[string]string, waits []fsm.DrainWait, node, bundle string, res scheduler.Result) []fsm.DrainWait {
	if res.Update != nil || res.Explain == nil || res.BudgetExhausted {
		return waits
	}
	key, why := node+"/"+bundle, scheduler.Summary(res.Explain)
	stuck[key] = why
	if prev, ok := d.stuck[key]; ok && prev == why {
		return waits
	}
	d.l.log.Warn("drain waits: a bundle on the node has nowhere to go; it moves when room appears",
		"node", node, "bundle", bundle, "why", why)
	return append(waits, fsm.DrainWait{Node: node, Bundle: bundle, Why: why})
}

// bundlesOn lists the bundles holding reservations on a node, in band order.
func bundlesOn(st *fsm.State, node string) []*fsm.Bundle {
	seen := map[string]bool{}
	var out []*fsm.Bundle
	for _, r := range st.NodeReservations(node) {
		if seen[r.Key.Bundle] {
			continue
		}
		seen[r.Key.Bundle] = true
		if b := st.Bundle(r.Key.Bundle); b != nil {
			out = append(out, b)
		}
	}
	sortByBand(out)
	return out
}
