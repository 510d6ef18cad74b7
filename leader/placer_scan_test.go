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
		e.bundle(fmt.Sprintf("b%04d", i), "p", fsm.PriorityBronze, 2000) // no preemption searches: nothing deferred
	}
	p := &placer{l: e.l}
	settle := func() {
		t.Helper()
		for range 4 { // a full plan, then the rest: held, then committed
			p.pass(e.ctx)
			e.clock.Advance(recordCoalesce)
		}
	}
	settle()
	if n := len(e.store.State().BundlesInState(fsm.StateUnplaceable)); n != total {
		t.Fatalf("%d unplaceable, want %d", n, total)
	}
	// A node joins that fits none of them: every one is tried against it,
	// though one plan holds only maxBundlesPerPlan.
	e.node("n2", "p", 1500, 4, fsm.NodeReady)
	joined := clusterIndex(e.store.State())
	settle()
	for _, b := range e.store.State().BundlesInState(fsm.StateUnplaceable) {
		if b.AttemptIndex < joined {
			t.Fatalf("%s last tried at %d, before the node joined at %d", b.ID(), b.AttemptIndex, joined)
		}
	}
	e.store.take()
	// Nothing left, nothing changed: no walk until unplaceableRescan.
	walked := p.scannedAt
	e.clock.Advance(5 * time.Second)
	p.pass(e.ctx)
	if !p.scannedAt.Equal(walked) {
		t.Fatalf("a pass with no cluster change and nothing left read the unplaceable bundles (at %v)", p.scannedAt)
	}
	e.clock.Advance(unplaceableRescan)
	p.pass(e.ctx)
	if !p.scannedAt.Equal(e.clock.Now()) {
		t.Fatalf("no read after %v (last at %v)", unplaceableRescan, p.scannedAt)
	}
	// A read owed to an earlier pass is one read, even when it finds
	// nothing to place.
	p.rescan = true
	e.clock.Advance(time.Second)
	p.pass(e.ctx)
	walked = p.scannedAt
	e.clock.Advance(time.Second)
	p.pass(e.ctx)
	if !walked.Equal(e.clock.Now().Add(-time.Second)) || !p.scannedAt.Equal(walked) {
		t.Fatalf("read at %v, then at %v: want one read, a second before now (%v)", walked, p.scannedAt, e.clock.Now())
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
	joined := clusterIndex(e.store.State())
	e.store.failNext(raftstore.ErrNoLeader)
	e.clock.Advance(recordCoalesce)
	p.pass(e.ctx)
	e.clock.Advance(recordCoalesce)
	p.pass(e.ctx)
	if b := e.get("big"); b.AttemptIndex < joined {
		t.Fatalf("big last tried at %d, before the node joined at %d", b.AttemptIndex, joined)
	}
}

// TestScanFinds: only an unplaceable bundle not tried against the cluster
// needs a read of them all; a deferred one (tried against it) is in the
// placer's memory, and a pending one is read on every pass. Counting the
// deferred made every pass under a burst of creates read the whole
// backlog (bench: write suite, 22 % of the CPU).
func TestScanFinds(t *testing.T) {
	b := func(state string, attempt uint64) *fsm.Bundle {
		return &fsm.Bundle{State: state, AttemptIndex: attempt}
	}
	for _, tc := range []struct {
		name string
		bs   []*fsm.Bundle
		want bool
	}{
		{"none", nil, false},
		{"pending", []*fsm.Bundle{b(fsm.StatePending, 0)}, false},
		{"tried against this cluster", []*fsm.Bundle{b(fsm.StateUnplaceable, 10), b(fsm.StateUnplaceable, 11)}, false},
		{"tried before it changed", []*fsm.Bundle{b(fsm.StatePending, 0), b(fsm.StateUnplaceable, 9)}, true},
	} {
		if got := scanFinds(tc.bs, 10); got != tc.want {
			t.Errorf("%s: scanFinds = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPlacerRetriesHeldUnplaceable: an unplaceable bundle tried again
// after a cluster change, whose record the pass holds back (recordCoalesce),
// is tried once more when the records may commit, without a cluster change.
func TestPlacerRetriesHeldUnplaceable(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	e.bundle("big", "p", fsm.PriorityBronze, 2000)
	p := &placer{l: e.l}
	p.pass(e.ctx) // the first record commits at once
	e.node("n2", "p", 1500, 4, fsm.NodeReady)
	joined := clusterIndex(e.store.State())
	e.store.take()
	p.pass(e.ctx) // within recordCoalesce of the first: held
	if ps := e.store.take(); len(ps) != 0 || e.get("big").AttemptIndex >= joined {
		t.Fatalf("the second record was not held: %v, attempt %d", typesOf(ps), e.get("big").AttemptIndex)
	}
	e.clock.Advance(recordCoalesce)
	p.pass(e.ctx)
	if b := e.get("big"); b.AttemptIndex < joined {
		t.Fatalf("big last tried at %d, before the node joined at %d", b.AttemptIndex, joined)
	}
}

// TestPlacerNotStarvedByUnchangedUnplaceable: a cluster change that the
// unplaceable bundles' explanations do not see (a pool created elsewhere)
// has them tried again, and each fails exactly as recorded, so nothing is
// committed and their attempt stays before the change. With more of them
// than one plan holds, every pass tried the same first ones again and a
// bundle queued behind them stayed pending for good (seen on a live
// cluster: 51,000 unplaceable, every new bundle pending).
func TestPlacerNotStarvedByUnchangedUnplaceable(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	total := 2*maxBundlesPerPlan + 3
	for i := range total {
		e.bundle(fmt.Sprintf("b%04d", i), "p", fsm.PriorityBronze, 2000) // bronze: no preemption searches
	}
	p := &placer{l: e.l}
	passes := func(n int) {
		for range n {
			p.pass(e.ctx)
			e.clock.Advance(recordCoalesce)
		}
	}
	passes(8)
	if n := len(e.store.State().BundlesInState(fsm.StateUnplaceable)); n != total {
		t.Fatalf("%d unplaceable, want %d", n, total)
	}
	before := map[string]uint64{}
	for _, b := range e.store.State().BundlesInState(fsm.StateUnplaceable) {
		before[b.ID()] = b.ModifyIndex
	}
	e.store.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "other", Kind: fsm.PoolCluster,
		Scoring: fsm.ScoringBinpack, Tiers: []fsm.Tier{{Name: "t", Cloud: "dc"}}}})
	passes(8)
	// Tried again and remembered, not written again: nothing changed for them.
	for _, b := range e.store.State().BundlesInState(fsm.StateUnplaceable) {
		if b.ModifyIndex != before[b.ID()] {
			t.Fatalf("%s was written again (modify %d, was %d) though its record did not change", b.ID(), b.ModifyIndex, before[b.ID()])
		}
	}
	e.bundle("late", "p", fsm.PriorityBronze, 500) // fits n1; queued after every older bronze bundle
	passes(8)
	if b := e.get("late"); b.State != fsm.StatePlaced {
		t.Fatalf("late is %s after 8 passes, want placed", b.State)
	}
}
