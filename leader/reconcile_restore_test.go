package leader

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// restore replaces the rig's state with a snapshot, as Raft does on every
// server when an operator restores one (PUT /v1/operator/snapshot).
func (r *fsmRig) restore(snap []byte) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked(true)
	if err := r.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		r.t.Fatalf("restore: %v", err)
	}
}

// snapshotOf is a snapshot of another cluster's state: n1 (which this
// cluster's gossip knows too), x1 ready and holding b1, x2 suspect.
func snapshotOf(t *testing.T) []byte {
	t.Helper()
	other := newEnv(t)
	other.node("n1", "p", 4000, 4, fsm.NodeReady)
	other.node("x1", "p", 4000, 4, fsm.NodeReady)
	other.node("x2", "p", 4000, 4, fsm.NodeSuspect)
	other.bundle("b1", "p", "", 1000)
	other.place("b1", 0, "x1")
	snap, err := other.store.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := fsm.PersistTo(snap, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReconcileRestoredUnseenNodes: a snapshot restored from another
// cluster brings nodes this cluster's gossip never saw, ready or suspect
// as that cluster left them. The unseen-node rule writes them down
// UnseenNodeDown after the leader first finds them missing (a restore's
// own workers get the time to join that a new term gives), however old the
// term was at the restore, and their bundles fail over; a restored node
// that gossip sees keeps its status.
func TestReconcileRestoredUnseenNodes(t *testing.T) {
	snap := snapshotOf(t)
	for _, tc := range []struct {
		name string
		term time.Duration // how long the leader had led when the restore came
	}{
		{"young term", 10 * time.Second},
		{"old term", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			e.members.set(member("n1", gossip.RoleWorker, gossip.StatusAlive, e.clock.Now()))
			r := &reconciler{l: e.l}
			r.nodes(e.ctx, true) // the term's first look
			e.clock.Advance(tc.term)
			r.nodes(e.ctx, true)

			e.store.restore(snap)
			r.nodes(e.ctx, true)
			e.clock.Advance(defaultUnseenNodeDown - time.Second)
			r.nodes(e.ctx, true)
			if ps := e.store.take(); len(ps) != 0 {
				t.Fatalf("proposed %v within UnseenNodeDown of the restore", typesOf(ps))
			}
			e.clock.Advance(time.Second)
			r.nodes(e.ctx, true)
			for id, want := range map[string]string{"n1": fsm.NodeReady, "x1": fsm.NodeDown, "x2": fsm.NodeDown} {
				if got := e.store.State().Node(id).Status; got != want {
					t.Errorf("node %s is %s, want %s", id, got, want)
				}
			}
			(&failover{l: e.l}).pass(e.ctx)
			if got := e.nodesOf("b1", 0)["a"]; got != "n1" {
				t.Fatalf("b1 is on %q after failover, want n1 (x1 is down)", got)
			}
		})
	}
}
