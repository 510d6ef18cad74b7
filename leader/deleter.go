package leader

import (
	"context"
	"fmt"
	"time"

	"github.com/amserver/amserver/fsm"
)

// deleter finishes the stop-then-delete saga (DESIGN §4): a deleting bundle
// is purged once every job is confirmed stopped or sits on a node that is
// down or gone, or when the delete timeout has passed.
type deleter struct {
	l *Leader
}

func (d *deleter) Name() string { return "deletion" }

func (d *deleter) Run(ctx context.Context) {
	for {
		watch := d.l.store.WatchCh()
		began := time.Now()
		d.pass(ctx)
		if !waitPaced(ctx, watch, time.Second, began) {
			return
		}
	}
}

// pass purges every deleting bundle that may leave the state now.
func (d *deleter) pass(ctx context.Context) {
	st := d.l.store.State()
	now := d.l.clock.Now()
	for _, b := range st.BundlesInState(fsm.StateDeleting) {
		if reason, ok := purgeReason(st, b, now, d.l.cfg.DeleteTimeout); ok {
			d.l.applyLogged(ctx, fsm.PurgeBundleType, &fsm.PurgeBundleRequest{ID: b.ID(), Reason: reason, Now: now.UnixNano()})
		}
	}
}

// purgeReason says whether a deleting bundle may leave the state, and why.
func purgeReason(st *fsm.State, b *fsm.Bundle, now time.Time, timeout time.Duration) (string, bool) {
	waiting, lost := 0, 0
	for _, a := range st.BundleAssignments(b.ID()) {
		if a.Status == fsm.JobStopped || a.Status == fsm.JobFailed || a.Status == fsm.JobExited {
			continue
		}
		if n := st.Node(a.NodeID); n == nil || n.Status == fsm.NodeDown || n.Status == fsm.NodeLeft {
			lost++ // unconfirmed: a partitioned worker may still run it
			continue
		}
		waiting++
	}
	switch {
	case waiting == 0 && lost == 0:
		return "every job stopped", true
	case waiting == 0:
		return fmt.Sprintf("every job stopped, except %d on nodes down or gone (not confirmed)", lost), true
	}
	if now.Sub(time.Unix(0, b.DeleteTime)) >= timeout {
		return fmt.Sprintf("delete timeout (%s) passed with %d job(s) not confirmed stopped", timeout, waiting), true
	}
	return "", false
}
