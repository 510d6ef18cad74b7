package leader

import (
	"fmt"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

// TestPlacerReadsUnplaceableWhenTheyMayFit: the unplaceable bundles are
// read after a cluster change, after a pass that left some of them for
// later (a queue over one plan, held records), and once per
// unplaceableRescan; not on every pass.
func TestPlacerReadsUnplaceableWhenTheyMayFit(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	total := maxBundlesPerPlan + 3
	for i := range total {
		e.bundle(fmt.Sprintf("b%04d", i), "p", "", 2000)
	}
	p := &placer{l: e.l}
	settle := func() {
		t.Helper()
		for range 4 { // a full plan, then the rest: held, then committed
			p.pass(e.ctx)
			e.clock.advance(recordCoalesce)
		}
	}
	settle()
	if n := len(e.store.State().BundlesInState(fsm.StateUnplaceable)); n != total {
		t.Fatalf("%d unplaceable, want %d", n, total)
	}
	// A node joins that fits none of them: every one is tried against it,
	// though one plan holds only maxBundlesPerPlan.
	e.node("n2", "p", 1500, 4, fsm.NodeReady)
	joined := e.store.State().Index("nodes", "pools")
	settle()
	for _, b := range e.store.State().BundlesInState(fsm.StateUnplaceable) {
		if b.AttemptIndex < joined {
			t.Fatalf("%s last tried at %d, before the node joined at %d", b.ID(), b.AttemptIndex, joined)
		}
	}
	e.store.take()
	// Nothing left, nothing changed: no walk until unplaceableRescan.
	walked := p.scannedAt
	e.clock.advance(5 * time.Second)
	p.pass(e.ctx)
	if !p.scannedAt.Equal(walked) {
		t.Fatalf("a pass with no cluster change and nothing left read the unplaceable bundles (at %v)", p.scannedAt)
	}
	e.clock.advance(unplaceableRescan)
	p.pass(e.ctx)
	if !p.scannedAt.Equal(e.clock.Now()) {
		t.Fatalf("no read after %v (last at %v)", unplaceableRescan, p.scannedAt)
	}
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("proposed %v for a cluster that did not change", typesOf(ps))
	}
}

// TestPlacerRetriesAPlanThatFailed: a plan that did not commit leaves its
// unplaceable bundles tried against the old cluster; the next pass reads
// them again without waiting for unplaceableRescan.
func TestPlacerRetriesAPlanThatFailed(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	e.bundle("big", "p", "", 2000)
	p := &placer{l: e.l}
	p.pass(e.ctx)
	if e.get("big").State != fsm.StateUnplaceable {
		t.Fatalf("big %s, want unplaceable", e.get("big").State)
	}
	e.node("n2", "p", 1500, 4, fsm.NodeReady)
	joined := e.store.State().Index("nodes", "pools")
	e.store.failNext(raftstore.ErrNoLeader)
	e.clock.advance(recordCoalesce)
	p.pass(e.ctx)
	e.clock.advance(recordCoalesce)
	p.pass(e.ctx)
	if b := e.get("big"); b.AttemptIndex < joined {
		t.Fatalf("big last tried at %d, before the node joined at %d", b.AttemptIndex, joined)
	}
}
