package scheduler

import (
	"fmt"
	"sync"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// Batch places many bundles against one snapshot and one ledger overlay:
// each placed bundle's reservations go into the overlay before the next
// bundle is considered, so a batch never double-books, and each bundle
// becomes one fsm.PlanPart, which the FSM re-checks and commits on its own.
// A Batch is not safe for concurrent use.
type Batch struct {
	snap    *Snapshot
	overlay *batchStore
	seed    uint64
	parts   []fsm.PlanPart
	removed []string
	updated map[string]bool // bundles some part of the plan changes
}

// NewBatch starts a batch. seed drives every tie-break and scan rotation;
// the leader passes the Raft index of the snapshot, so a dry run with the
// same seed reproduces the decision.
func (sn *Snapshot) NewBatch(seed uint64) *Batch {
	return &Batch{snap: sn, overlay: newBatchStore(sn.idx), seed: seed}
}

// Store is the batch's ledger overlay. Callers may release reservations in
// it hypothetically (preemption, drain) before placing, with ledger.Release;
// nothing reaches the state except through the plan.
func (b *Batch) Store() ledger.Store { return b.overlay }

// View is the state view the batch places against.
func (b *Batch) View() View { return b.snap.View() }

// Remove treats nodes as gone for every later placement of the batch.
func (b *Batch) Remove(nodes ...string) { b.removed = append(b.removed, nodes...) }

// PlaceAll places bundles in the caller's order (the pending queue's).
func (b *Batch) PlaceAll(bundles []*fsm.Bundle) []Result {
	out := make([]Result, len(bundles))
	for i, bundle := range bundles {
		out[i] = b.Place(bundle)
	}
	return out
}

// Plan returns the plan so far, stamped with the leader's clock.
func (b *Batch) Plan(now int64) *fsm.Plan {
	return &fsm.Plan{Now: now, Parts: append([]fsm.PlanPart(nil), b.parts...)}
}

// OnlyExplains reports whether every part of the plan so far only records
// why a bundle does not fit: nothing placed, released, promoted or moved.
func (b *Batch) OnlyExplains() bool {
	for _, p := range b.parts {
		for _, u := range p.Updates {
			if u.Promote || len(u.Release) > 0 || len(u.Place) > 0 || u.SetDegradations || u.Preemptor != "" || u.Explain == nil {
				return false
			}
		}
	}
	return len(b.parts) > 0
}

// Parts is the number of plan parts so far.
func (b *Batch) Parts() int { return len(b.parts) }

// Updated reports whether the plan so far changes the bundle. The bundle
// objects the caller holds are then stale for this batch: preemption never
// picks such a bundle as a victim, and a leader should not decide on it
// again before the plan is applied.
func (b *Batch) Updated(bundleID string) bool { return b.updated[bundleID] }

func (b *Batch) addPart(u *fsm.BundleUpdate) { b.addUpdates(*u) }

// addUpdates adds one part: the updates commit together or not at all.
func (b *Batch) addUpdates(us ...fsm.BundleUpdate) {
	if b.updated == nil {
		b.updated = map[string]bool{}
	}
	for _, u := range us {
		b.updated[u.BundleID] = true
	}
	b.parts = append(b.parts, fsm.PlanPart{Updates: us})
}

// exclude treats nodes as gone for the placements made until restore runs
// (a drained node, lost nodes the snapshot may still call ready).
func (b *Batch) exclude(nodes []string) (restore func()) {
	n := len(b.removed)
	b.removed = append(b.removed[:n:n], nodes...)
	return func() { b.removed = b.removed[:n:n] }
}

// releaseKeys releases reservations in the overlay; absent ones are skipped.
func (b *Batch) releaseKeys(keys []ledger.Key) {
	for _, k := range keys {
		ledger.Release(b.overlay, k)
	}
}

// reserve records placements in the overlay. On an error (the search and the
// ledger disagree: a bug) it rolls back what it reserved.
func (b *Batch) reserve(bundle string, places []fsm.Place) error {
	for i, p := range places {
		pool := ""
		if n := b.snap.idx.node(p.Node); n != nil {
			pool = n.node.Pool
		}
		r := ledger.Reservation{Key: ledger.Key{Bundle: bundle, Replica: p.Slot, Job: p.Job}, Node: p.Node, Pool: pool, Grant: p.Grant}
		if err := ledger.Reserve(b.overlay, r); err != nil {
			b.release(bundle, places[:i])
			return fmt.Errorf("reserve %s: %w", r.Key, err)
		}
	}
	return nil
}

func (b *Batch) release(bundle string, places []fsm.Place) {
	for _, p := range places {
		ledger.Release(b.overlay, ledger.Key{Bundle: bundle, Replica: p.Slot, Job: p.Job})
	}
}

// defaultEngine serves the package-level helpers.
var defaultEngine = sync.OnceValue(func() *Engine { return NewEngine(Options{}) })

// PlaceBatch places bundles, in order, against one snapshot of v and returns
// the plan (parts only for bundles whose placement changes) and each
// bundle's result.
func PlaceBatch(v View, bundles []*fsm.Bundle, seed uint64, now int64) (*fsm.Plan, []Result) {
	b := defaultEngine().Snapshot(v).NewBatch(seed)
	res := b.PlaceAll(bundles)
	return b.Plan(now), res
}

// DryRun is Snapshot.DryRun on a fresh snapshot of v.
func DryRun(v View, spec fsm.BundleSpec, seed uint64) (*fsm.Bundle, *fsm.Explain) {
	return defaultEngine().Snapshot(v).DryRun(spec, seed)
}
