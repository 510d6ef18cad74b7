package leader

import (
	"context"
	"slices"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// maxBundlesPerPlan bounds one Raft entry; a burst is placed over several.
const maxBundlesPerPlan = 512

// placer is the placement loop: it places pending bundles (gold, silver,
// bronze, then age), completes missing backups, heals degraded ones, and
// retries unplaceable bundles only after the cluster changed. Its queue is
// rebuilt from the replicated state on every pass.
type placer struct {
	l *Leader
	// tried rate-limits preemption searches, which read every reservation
	// on the candidate nodes: leader-local and disposable, not state.
	tried    map[string]time.Time
	prunedAt time.Time
	// deferred are bundles the pause kept from a search while a cluster
	// change had them in the queue, with when they may search again. The
	// change was spent on a Place that could not succeed, so without
	// this they would wait for another one however long the pause is.
	deferred *deferrals
	// scannedAt and scannedChange record the last pass that looked at the
	// unplaceable bundles, and the cluster index it saw; rescan, that a
	// pass since left some that only such a read finds (scanFinds).
	scannedAt     time.Time
	scannedChange uint64
	rescan        bool
	// since times the pending bundles for the placement latency metric.
	since pendingSince
	// recordedAt is when the last plan of only failure records committed;
	// recordDue, when set, how long until the next may (holdRecords).
	recordedAt time.Time
	recordDue  time.Duration
	// held are the bundles whose failure records wait (holdRecords), with
	// what they were tried against (heldTry).
	held map[string]heldTry
	// unchanged are the unplaceable bundles a try left as they were
	// (placer_unchanged.go); again, that a pass added some and left more
	// of the queue than one plan holds: the next pass runs without waiting.
	unchanged unchangedTries
	again     bool
}

// unplaceableRescan is how often the placer re-reads every unplaceable
// bundle while the cluster has not changed and no pass left such bundles
// behind. One can only fit once the cluster changes, and every change is
// read (clusterIndex), so that walk finds nothing to do: a safety net only.
// Walking them on every pass grew with each create into a full pool, and
// once a second it still cost the leader 3 % of the write suite's CPU
// (docs/performance.md).
const unplaceableRescan = 30 * time.Second

// recordCoalesce is how often at most the placer commits a plan that only
// records why bundles do not fit. Each create into a full pool woke a pass
// whose plan was one such record: two Raft entries per create (issue 19).
// A record that waits is folded into the next one, or into the next plan
// that places something; the bundle reads pending until then.
const recordCoalesce = 100 * time.Millisecond

// passSpacing is the least time from one pass's start to the next while
// passes commit nothing. A pass reads and sorts every pending bundle, and
// under a stream of creates every commit woke one, most of them to find
// the same bundles held or unplaceable: a fifth of the write suite's CPU
// at c=64 (issue 19, docs/performance.md). A new bundle waits at most this
// much longer for its first try; after a pass that commits, the next runs
// at once.
const passSpacing = 5 * time.Millisecond

// Preemption budget: searches per pass, and the pause before a bundle that
// found no victims is searched again.
const (
	preemptPerPass = 16
	preemptRetry   = 30 * time.Second
)

func (p *placer) Name() string { return "placement" }

func (p *placer) Run(ctx context.Context) {
	p.since = pendingSince{}  // a new term measures from when it takes over
	p.scannedAt = time.Time{} // and reads the unplaceable bundles first
	for ctx.Err() == nil {
		watch := p.l.store.WatchCh()
		began := time.Now()
		committed := p.pass(ctx)
		wait := 5 * time.Second
		if p.recordDue > 0 {
			wait, p.recordDue = p.recordDue, 0
		}
		if committed > 0 || p.again {
			continue
		}
		// No watch: the spacing waits for time alone.
		if !waitChange(ctx, watch, wait) || !waitChange(ctx, nil, passSpacing-time.Since(began)) {
			return
		}
	}
}

// pass places one batch and returns how many plan parts committed.
func (p *placer) pass(ctx context.Context) int {
	st := p.l.store.State()
	start := p.l.clock.Now()
	p.again = false
	cluster := clusterIndex(st)
	queue := p.unchanged.skip(placementQueue(st, p.scanUnplaceable(st, start)), cluster)
	queue = p.withDeferred(st, queue, start)
	if len(queue) == 0 {
		return 0
	}
	if p.since == nil {
		p.since = pendingSince{}
	}
	p.since.see(queue, start)
	queue, held := p.splitHeld(queue, cluster, start)
	// Unplaceable bundles this pass leaves (held records, a queue over one
	// plan) are read again by the next; pending ones always are.
	p.rescan = scanFinds(held, cluster) || len(queue) > maxBundlesPerPlan && scanFinds(queue[maxBundlesPerPlan:], cluster)
	if len(queue) == 0 {
		return 0
	}
	more := len(queue) > maxBundlesPerPlan
	if more {
		queue = queue[:maxBundlesPerPlan]
	}
	batch := p.l.engine.Snapshot(st).NewBatch(p.l.store.AppliedIndex())
	p.pruneTried(start)
	budget := preemptPerPass
	p.placeAll(batch, queue, &budget, start)
	p.again = p.unchanged.remember(batch, queue, cluster) > 0 && more
	if p.holdRecords(batch, len(queue)+len(held), start) {
		p.hold(queue, cluster)
		p.rescan = p.rescan || scanFinds(queue, cluster)
		return 0
	}
	// This plan commits: the records held back ride along.
	p.placeAll(batch, held[:min(len(held), maxBundlesPerPlan)], &budget, start)
	p.held = nil
	committed := p.l.applyBatch(ctx, batch)
	if committed < batch.Parts() { // a part that did not commit is tried again next pass
		p.rescan = p.rescan || scanFinds(queue, cluster) || scanFinds(held, cluster)
	}
	end := p.l.clock.Now()
	p.l.metrics.PlacementBatch.Observe(end.Sub(start).Seconds())
	p.since.settle(p.l.store.State(), p.l.metrics.PlacementLatency, end)
	return committed
}

// placeAll places queue into batch, in order.
func (p *placer) placeAll(batch *scheduler.Batch, queue []*fsm.Bundle, budget *int, now time.Time) {
	for _, b := range queue {
		if batch.Updated(b.ID()) {
			// Evicted by a preemption earlier in this batch: b is stale,
			// and healing or placing it would build on a backup that is
			// gone. The next pass sees it as the plan left it.
			continue
		}
		p.placeOne(batch, b, budget, now)
	}
}

// placeOne heals, places, or — for a primary that does not fit and a band
// that can evict someone — preempts lower bands (DESIGN §3.6).
func (p *placer) placeOne(batch *scheduler.Batch, b *fsm.Bundle, budget *int, now time.Time) {
	switch {
	case needsHeal(b):
		batch.Heal(b)
	case p.mayPreempt(b, budget, now):
		if res := batch.Preempt(b); res.Update == nil {
			batch.Place(b) // nothing to evict: record why it does not fit
		}
	default:
		batch.Place(b)
	}
}

// mayPreempt says whether b searches for victims now, spending the pass's
// budget; a bundle its pause stops is deferred to the pause's end.
func (p *placer) mayPreempt(b *fsm.Bundle, budget *int, now time.Time) bool {
	if !scheduler.Preempts(b) {
		return false
	}
	if last, ok := p.tried[b.ID()]; ok && now.Sub(last) < preemptRetry {
		if p.deferred == nil {
			p.deferred = newDeferrals()
		}
		p.deferred.Add(b.ID(), last.Add(preemptRetry))
		return false
	}
	if *budget == 0 {
		return false
	}
	if p.tried == nil {
		p.tried = map[string]time.Time{}
	}
	p.tried[b.ID()] = now
	if p.deferred != nil {
		p.deferred.Remove(b.ID())
	}
	*budget--
	return true
}

// pruneTried forgets searches older than preemptRetry, at most once a
// second: done per bundle, as before, it walked the whole map up to
// preemptPerPass times a pass, and under a burst of creates into a full pool
// the map holds thousands of ids (bench: write suite).
func (p *placer) pruneTried(now time.Time) {
	if now.Sub(p.prunedAt) < time.Second {
		return
	}
	p.prunedAt = now
	for id, at := range p.tried {
		if now.Sub(at) >= preemptRetry {
			delete(p.tried, id)
		}
	}
}

// withDeferred adds to the queue up to preemptPerPass deferred bundles
// whose pause is over, most important first, and forgets those that no
// longer need a search. A bundle stays deferred until it is searched
// (mayPreempt), so one that loses this pass's budget comes back next pass.
func (p *placer) withDeferred(st *fsm.State, queue []*fsm.Bundle, now time.Time) []*fsm.Bundle {
	if p.deferred == nil || p.deferred.Len() == 0 {
		return queue
	}
	queued := make(map[string]bool, len(queue))
	for _, b := range queue {
		queued[b.ID()] = true
	}
	due := p.deferred.Due(st.Bundle, now, preemptPerPass, func(id string) bool { return queued[id] })
	if len(due) == 0 {
		return queue
	}
	queue = append(queue, due...)
	sortByBand(queue)
	return queue
}

// clusterIndex is the last change to what a placement depends on besides
// the bundle itself: nodes, pools and the cluster's caps. An unplaceable
// bundle is tried again once it moves (AttemptIndex).
func clusterIndex(st *fsm.State) uint64 { return st.Index("nodes", "pools", "caps") }

// scanFinds says whether some of bs are unplaceable bundles that only a
// read of them all finds (placementQueue): not yet tried against cluster.
// Pending ones are read on every pass, deferred ones are remembered.
func scanFinds(bs []*fsm.Bundle, cluster uint64) bool {
	return slices.ContainsFunc(bs, func(b *fsm.Bundle) bool {
		return b.State == fsm.StateUnplaceable && b.AttemptIndex < cluster
	})
}

// scanUnplaceable says whether this pass reads the unplaceable bundles:
// after a cluster change (that is what they wait for), after a pass that
// left some for later, otherwise once per unplaceableRescan.
func (p *placer) scanUnplaceable(st *fsm.State, now time.Time) bool {
	changed := clusterIndex(st)
	if changed == p.scannedChange && !p.rescan && now.Sub(p.scannedAt) < unplaceableRescan {
		return false
	}
	p.scannedChange, p.scannedAt, p.rescan = changed, now, false
	return true
}

// placementQueue lists the bundles that need the placer, ordered by band,
// then submission time, then id (DESIGN §3.6). Unplaceable bundles are
// included only when withUnplaceable.
func placementQueue(st *fsm.State, withUnplaceable bool) []*fsm.Bundle {
	changed := clusterIndex(st)
	states := []string{fsm.StatePending, fsm.StateDegraded}
	if withUnplaceable {
		states = append(states, fsm.StateUnplaceable)
	}
	var out []*fsm.Bundle
	for _, b := range st.BundlesInState(states...) {
		switch {
		case b.State == fsm.StatePending:
		case b.AttemptIndex >= changed:
			continue // tried against this very cluster: wait for a change
		}
		out = append(out, b)
	}
	sortByBand(out)
	return out
}

// needsHeal: the bundle is fully placed but carries a relaxed backup rule.
func needsHeal(b *fsm.Bundle) bool {
	for i := range b.Replicas {
		if !b.Replicas[i].Complete() {
			return false
		}
	}
	return b.State == fsm.StateDegraded
}
