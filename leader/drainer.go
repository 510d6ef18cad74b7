package leader

import (
	"context"
	"time"

	"github.com/amserver/amserver/fsm"
)

// drainer moves every job off draining nodes (DESIGN §4): promote the
// backup first where there is one, else place-then-stop. A bundle that has
// nowhere to go stays; the next change retries it.
type drainer struct {
	l *Leader
}

func (d *drainer) Name() string { return "drain" }

func (d *drainer) Run(ctx context.Context) {
	for {
		watch := d.l.store.WatchCh()
		d.pass(ctx)
		if !waitChange(ctx, watch, 5*time.Second) {
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
		return
	}
	batch := d.l.engine.Snapshot(st).NewBatch(d.l.store.AppliedIndex())
	for _, n := range batchNodes {
		for _, b := range bundlesOn(st, n.ID) {
			if batch.Updated(b.ID()) {
				// Moved off another draining node in this batch: b is
				// stale, and moving its jobs from it could break its
				// rules against where the other jobs just went. Next pass.
				continue
			}
			batch.Drain(b, n.ID)
		}
	}
	d.l.applyBatch(ctx, batch)
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
