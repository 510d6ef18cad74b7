package leader

import (
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

// TestDeleter: a deleting bundle is purged once every job is confirmed
// stopped or sits on a node that is down or gone, or once DeleteTimeout
// has passed on the leader's clock, and not before.
func TestDeleter(t *testing.T) {
	tests := []struct {
		name   string
		then   func(e *env) // what happens after the delete
		wait   time.Duration
		purged bool
		reason string
	}{
		{"waits for its jobs", func(*env) {}, time.Minute - time.Nanosecond, false, ""},
		{"jobs stopped", reportStopped, 0, true, "every job stopped"},
		{"job failed", func(e *env) { report(e, fsm.JobFailed) }, 0, true, "every job stopped"},
		{"node down", func(e *env) { e.setStatus("n1", fsm.NodeDown) }, 0, true, "every job stopped, except 1 on nodes down or gone (not confirmed)"},
		{"node left", func(e *env) { e.setStatus("n1", fsm.NodeLeft) }, 0, true, "every job stopped, except 1 on nodes down or gone (not confirmed)"},
		{"node suspect", func(e *env) { e.setStatus("n1", fsm.NodeSuspect) }, time.Second, false, ""},
		{"timeout", func(*env) {}, time.Minute, true, "delete timeout (1m0s) passed with 1 job(s) not confirmed stopped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			e.bundle("b", "p", "", 1000)
			e.place("b", 0, "n1")
			e.store.ok(fsm.DeleteBundleType, &fsm.DeleteBundleRequest{ID: "b", Now: e.now()})
			tc.then(e)
			e.clock.Advance(tc.wait)
			(&deleter{l: e.l}).pass(e.ctx)
			gone := e.store.State().Bundle("b") == nil
			if gone != tc.purged {
				t.Fatalf("purged %t, want %t", gone, tc.purged)
			}
			ps := e.store.take()
			if !tc.purged {
				if len(ps) != 0 {
					t.Fatalf("proposed %v before the bundle may go", typesOf(ps))
				}
				return
			}
			if len(ps) != 1 || ps[0].typ != fsm.PurgeBundleType {
				t.Fatalf("proposed %v, want one purge", typesOf(ps))
			}
			if req := ps[0].body.(*fsm.PurgeBundleRequest); req.Reason != tc.reason || req.Now != e.now() {
				t.Fatalf("purge %+v, want one at %d because %q", req, e.now(), tc.reason)
			}
			if n := e.store.State().Node("n1"); n.Usage.Reservations != 0 {
				t.Fatalf("n1 still holds %d reservations", n.Usage.Reservations)
			}
		})
	}
}

// TestDeleterNeverPlaced: a bundle that never held a node goes at once;
// one not being deleted is never purged.
func TestDeleterNeverPlaced(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 100, 1, fsm.NodeReady)
	e.bundle("kept", "p", "", 1000)
	e.bundle("b", "p", "", 1000)
	e.store.ok(fsm.DeleteBundleType, &fsm.DeleteBundleRequest{ID: "b", Now: e.now()})
	e.clock.Advance(time.Hour)
	(&deleter{l: e.l}).pass(e.ctx)
	st := e.store.State()
	if st.Bundle("b") != nil || st.Bundle("kept") == nil {
		t.Fatal("want b purged and kept kept")
	}
	if ps := e.store.take(); len(ps) != 1 || !strings.Contains(ps[0].body.(*fsm.PurgeBundleRequest).Reason, "stopped") {
		t.Fatalf("proposed %v, want one purge", typesOf(ps))
	}
}

func reportStopped(e *env) { report(e, fsm.JobStopped) }

// report has the bundle's worker report every assignment in status.
func report(e *env, status string) {
	e.t.Helper()
	for _, a := range e.store.State().BundleAssignments("b") {
		e.store.ok(fsm.AssignmentStatusType, &fsm.AssignmentStatusRequest{
			NodeID: a.NodeID, AssignmentID: a.ID, Status: status, Now: e.now(),
		})
	}
}
