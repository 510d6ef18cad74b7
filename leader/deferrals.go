package leader

import (
	"container/heap"
	"time"

	"github.com/tidwall/btree"

	"github.com/amserver/amserver/fsm"
)

// deferrals are the bundles whose preemption search waits for its pause to
// end (placer.mayPreempt), with when each may search again. A pass asks
// only for the few that are due, most important first, so its cost follows
// what it takes, not how many wait: a map walked on every pass cost a
// third of the write suite's CPU once a burst of creates into a full pool
// had deferred thousands of bundles (issue 19).
type deferrals struct {
	entries map[string]*deferral
	// waiting orders the entries not yet due by due time; an entry moved
	// or removed leaves its old heap item behind, skipped when popped.
	waiting deferHeap
	// ready holds the due entries in placement order (sortByBand).
	ready *btree.BTreeG[readyKey]
}

type deferral struct {
	at    time.Time
	ready *readyKey // set once due
}

// readyKey is sortByBand's order: band, then submission, then id.
type readyKey struct {
	band   int
	submit int64
	id     string
}

func readyLess(a, b readyKey) bool {
	if a.band != b.band {
		return a.band < b.band
	}
	if a.submit != b.submit {
		return a.submit < b.submit
	}
	return a.id < b.id
}

func newDeferrals() *deferrals {
	return &deferrals{entries: map[string]*deferral{}, ready: btree.NewBTreeGOptions(readyLess, btree.Options{NoLocks: true})}
}

// Len is how many bundles are deferred.
func (d *deferrals) Len() int { return len(d.entries) }

// Add defers id until at; a bundle deferred again moves to the new time.
func (d *deferrals) Add(id string, at time.Time) {
	if e, ok := d.entries[id]; ok {
		if e.ready == nil && e.at.Equal(at) {
			return
		}
		d.Remove(id)
	}
	d.entries[id] = &deferral{at: at}
	heap.Push(&d.waiting, deferItem{at: at, id: id})
}

// Remove forgets id (it was searched, or no longer needs a search).
func (d *deferrals) Remove(id string) {
	e, ok := d.entries[id]
	if !ok {
		return
	}
	if e.ready != nil {
		d.ready.Delete(*e.ready)
	}
	delete(d.entries, id)
}

// Due returns up to n deferred bundles whose pause is over at now, in
// placement order, skipping those skip names; it forgets the bundles that
// bundle (the state's lookup) says no longer need a search. A bundle
// stays deferred until Remove.
func (d *deferrals) Due(bundle func(id string) *fsm.Bundle, now time.Time, n int, skip func(id string) bool) []*fsm.Bundle {
	d.promote(bundle, now)
	var out []*fsm.Bundle
	var goneIDs []string
	d.ready.Scan(func(k readyKey) bool {
		b := bundle(k.id)
		switch {
		case !needsSearch(b):
			goneIDs = append(goneIDs, k.id)
		case skip(k.id):
		default:
			out = append(out, b)
		}
		return len(out) < n
	})
	for _, id := range goneIDs {
		d.Remove(id)
	}
	return out
}

// promote moves the entries due at now from waiting to ready, forgetting
// those that no longer need a search.
func (d *deferrals) promote(bundle func(id string) *fsm.Bundle, now time.Time) {
	for d.waiting.Len() > 0 && !d.waiting[0].at.After(now) {
		it := heap.Pop(&d.waiting).(deferItem)
		e, ok := d.entries[it.id]
		if !ok || e.ready != nil || !e.at.Equal(it.at) {
			continue // moved or removed since it was pushed
		}
		b := bundle(it.id)
		if !needsSearch(b) {
			delete(d.entries, it.id)
			continue
		}
		k := readyKey{band: b.Spec.EffectiveBand(), submit: b.SubmitTime, id: it.id}
		e.ready = &k
		d.ready.Set(k)
	}
}

// needsSearch says whether a deferred bundle still waits for a preemption
// search: it exists, is unplaceable, and its band may evict others.
func needsSearch(b *fsm.Bundle) bool {
	return b != nil && b.State == fsm.StateUnplaceable && b.Spec.EffectiveBand() < fsm.Band(fsm.PriorityBronze)
}

type deferItem struct {
	at time.Time
	id string
}

// deferHeap is a min-heap of deferItems by due time.
type deferHeap []deferItem

func (h deferHeap) Len() int           { return len(h) }
func (h deferHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deferHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deferHeap) Push(x any)        { *h = append(*h, x.(deferItem)) }
func (h *deferHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
