package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// Preempt places a bundle's missing replica by evicting replicas of bundles
// in strictly lower priority bands (DESIGN §3.6). The leader calls it after
// Place left a primary unplaced; it also serves a bundle whose primary is
// placed but whose backup is missing, and then evicts only lower-band
// backups, as §3.6 allows a backup no more.
//
// Victims are whole replicas holding reservations on nodes that could host
// the replica, tried in preference order: backups before primaries, then
// lower bands first, then fewer jobs, then bundle id and slot. The search
// releases victims hypothetically in the batch's overlay and retries the
// gang placement to find the shortest prefix of the preference order that
// makes room (galloping, then bisection: releasing more never hurts), then
// drops victims the placement does not need: first those with nothing on
// the placement's nodes (or in its pool, when the pool has caps), then, in
// a reverse pass, every victim without which some placement still fits.
// The set returned is therefore minimal: no victim can be spared. Two
// replicas of one bundle are never both victims, in one part or anywhere
// in the batch's plan (see search).
//
// On success the batch gains ONE plan part, committed all or nothing by the
// FSM: one update per victim, then the preemptor's update (its placements,
// and for a primary a backup down the ladder as Place would, without
// evicting anything for it). A victim that loses its primary has its backup
// promoted in the same update when that backup is complete and healthy;
// otherwise its primary is just released and the bundle is pending again.
// A victim that loses its backup is left with noBackup, which re-queues it.
// Every victim update names the preemptor. The evictions and placements
// stay in the batch's overlay, so later decisions of the batch see them.
//
// When nothing can make room, or the search runs out of its trial budget
// before it can prove a set minimal, there is no part and the result
// explains the placement with every candidate evicted. A bundle that fits
// without evicting anything is simply placed (Place).
func (b *Batch) Preempt(bundle *fsm.Bundle) Result {
	res := unchanged(bundle)
	target, ok := preemptTarget(bundle)
	if !ok || b.movedInBatch(bundle.ID()) {
		return res
	}
	p := b.newPreemption(bundle, target)
	if p.try(nil, false).Placed {
		return b.Place(bundle)
	}
	p.cands = p.candidates()
	set, ok, exhausted := p.search()
	if !ok {
		// Explained with every candidate evicted (the preferred replica of
		// each bundle): why even preemption cannot make room, unless the
		// budget ran out.
		ex := p.try(onePerBundle(p.cands), true).Explain
		res.BudgetExhausted = exhausted
		if target == 0 {
			res.Explain = ex
		} else {
			res.BackupExplain = ex
		}
		return res
	}
	return b.evict(bundle, p, set)
}

// preemptTarget is the replica index Preempt places: the primary when it is
// incomplete, else a missing backup of a resilient bundle.
func preemptTarget(bundle *fsm.Bundle) (int, bool) {
	switch {
	case bundle.Deleting || len(bundle.Replicas) == 0 || bundle.Spec.Kind != "":
		return 0, false // services and batches neither preempt nor are preempted
	case !bundle.Replicas[0].Complete():
		return 0, true
	case bundle.Spec.Resilience != nil && len(bundle.Replicas) > 1 && !bundle.Replicas[1].Complete():
		return 1, true
	}
	return 0, false
}

// movedInBatch reports whether the plan already places or releases jobs of
// the bundle: the caller's bundle object is then stale for this batch and
// deciding on it again could double-book it.
func (b *Batch) movedInBatch(id string) bool {
	if !b.updated[id] {
		return false
	}
	for _, part := range b.parts {
		for _, u := range part.Updates {
			if u.BundleID == id && (len(u.Place) > 0 || len(u.Release) > 0 || u.Promote) {
				return true
			}
		}
	}
	return false
}

// Search bounds: every trial is one gang search (a ladder of them for a
// backup). Galloping and bisection need about 2·log2(candidates) trials per
// round, the reverse pass one per victim that survives pruning.
const (
	maxVictims        = 1 << 16
	maxVictimsPerNode = 128
	maxPreemptTrials  = 256
	maxPreemptRounds  = 4
)

// search finds a minimal victim set, or reports that none was found;
// exhausted says the trial budget ran out first. Both replicas of a bundle
// may be candidates (which one helps depends on where the replica lands),
// but a set may hold only one: when the minimal set found holds both, the
// less preferred of the two is barred and the search runs again, a few
// rounds at most.
func (p *preemption) search() (set []*Victim, ok, exhausted bool) {
	barred := map[*Victim]bool{}
	for range maxPreemptRounds {
		list := slices.DeleteFunc(slices.Clone(p.cands), func(v *Victim) bool { return barred[v] })
		k, placed, found := p.shortestPrefix(list)
		if !found {
			break
		}
		set, ok := p.minimise(list[:k], placed)
		if !ok {
			break
		}
		clash := pairedVictims(set)
		if len(clash) == 0 {
			return set, true, false
		}
		for _, v := range clash {
			barred[v] = true
		}
	}
	return nil, false, p.trials >= maxPreemptTrials
}

// pairedVictims returns, for every bundle with both replicas in set, the
// less preferred one (set is in preference order).
func pairedVictims(set []*Victim) []*Victim {
	seen := map[string]bool{}
	var out []*Victim
	for _, v := range set {
		if seen[v.BundleID] {
			out = append(out, v)
		}
		seen[v.BundleID] = true
	}
	return out
}

// shortestPrefix finds the shortest prefix of list whose eviction makes
// room, with that trial's placement: galloping (prefixes of 1, 2, 4, …
// victims) until one fits, then bisection between the last two sizes.
// Releasing more never hurts, so the answer is exact. Releases are
// incremental inside one checkpoint, undone back to the last prefix that
// did not fit, so a shallow preemption never touches the long tail of the
// candidate list and a deep one releases each victim a few times, not once
// per trial.
func (p *preemption) shortestPrefix(list []*Victim) (int, GangResult, bool) {
	ov := p.b.overlay
	defer ov.rollback(ov.checkpoint())
	lo, hi := 0, -1 // list[:lo] is released and does not make room
	var placed GangResult
	for size := 1; hi < 0; size *= 2 {
		if lo == len(list) || p.trials >= maxPreemptTrials {
			return 0, placed, false
		}
		next, mark := min(size, len(list)), ov.journalLen()
		p.release(list[lo:next])
		if r := p.place(false); r.Placed {
			hi, placed = next, r
			ov.undoTo(mark)
		} else {
			lo = next
		}
	}
	for hi-lo > 1 && p.trials < maxPreemptTrials {
		mid, mark := (lo+hi)/2, ov.journalLen()
		p.release(list[lo:mid])
		if r := p.place(false); r.Placed {
			hi, placed = mid, r
			ov.undoTo(mark)
		} else {
			lo = mid
		}
	}
	return hi, placed, true
}

// minimise drops the victims a placement does not need. Pruning first: a
// victim with no reservation on the placement's nodes frees nothing it uses
// (unless the pool's caps count it), so the same placement still fits
// without it. Then the reverse pass: the least preferred victim first, each
// victim whose release is not needed for some placement to fit is dropped.
// Feasibility is monotone in the released set, so what is left is minimal.
// Running out of trials before the pass ends yields nothing: a set not
// proven minimal is never returned.
func (p *preemption) minimise(prefix []*Victim, placed GangResult) ([]*Victim, bool) {
	set := p.prune(prefix, placed)
	if len(set) < len(prefix) && !p.try(set, false).Placed {
		set = prefix // the search disagrees with the pruning argument: a bug; stay safe
	}
	for i := len(set) - 1; i >= 0 && len(set) > 1; i-- {
		if p.trials >= maxPreemptTrials {
			return nil, false
		}
		without := slices.Delete(slices.Clone(set), i, i+1)
		if p.try(without, false).Placed {
			set = without
		}
	}
	return set, true
}

func (p *preemption) prune(set []*Victim, placed GangResult) []*Victim {
	used := map[string]bool{}
	for _, node := range placed.Nodes { // membership only
		used[node] = true
	}
	caps := p.poolCapped()
	return slices.DeleteFunc(slices.Clone(set), func(v *Victim) bool {
		for _, r := range v.held {
			if used[r.Node] || (caps && r.Pool == p.pool) {
				return false
			}
		}
		return true
	})
}

// evict commits the victim set: releases it in the overlay, places the
// bundle as Place would, and adds one part with every update. The trial that
// chose the set ran the same searches with the same seeds on the same
// usage, so the placement is the one the trial found; should they ever
// disagree nothing is kept.
func (b *Batch) evict(bundle *fsm.Bundle, p *preemption, set []*Victim) Result {
	mark := b.overlay.checkpoint()
	for _, v := range set {
		for _, r := range v.held {
			ledger.Release(b.overlay, r.Key)
		}
	}
	res, places := b.fill(bundle)
	if !res.PrimaryPlaced || (p.target == 1 && !res.BackupPlaced) {
		b.overlay.rollback(mark)
		out := unchanged(bundle)
		out.Explain = internalExplain(fmt.Errorf("preemption trial and placement disagree"))
		return out
	}
	b.overlay.keep(mark)
	var names []string
	victims := make([]fsm.BundleUpdate, 0, len(set))
	for _, v := range set {
		victims = append(victims, b.victimUpdate(v, bundle))
		names = append(names, fmt.Sprintf("%s (%s %s)", v.BundleID, v.Priority, roleName(v.Primary)))
		res.Victims = append(res.Victims, *v)
	}
	res.Update = &fsm.BundleUpdate{
		BundleID: bundle.ID(), Place: places, SetDegradations: true, Degradations: res.Degradations,
		Reason: "placed by evicting " + strings.Join(names, ", "),
	}
	// The FSM stages a part's updates in order against one overlay, so the
	// evictions go first: the preemptor's placements need their room.
	b.addUpdates(append(victims, *res.Update)...)
	return res
}

// victimUpdate evicts one replica: release its jobs; for a primary promote
// the backup at once when it can take over; record noBackup when the
// bundle is left with a primary only.
func (b *Batch) victimUpdate(v *Victim, preemptor *fsm.Bundle) fsm.BundleUpdate {
	vb := b.snap.idx.view.Bundle(v.BundleID)
	u := fsm.BundleUpdate{BundleID: v.BundleID, Preemptor: preemptor.ID(),
		Reason: fmt.Sprintf("%s evicted by %s (%s)", roleName(v.Primary), preemptor.ID(), preemptor.Spec.EffectivePriority())}
	for _, r := range v.held {
		u.Release = append(u.Release, fsm.SlotJob{Slot: r.Key.Replica, Job: r.Key.Job})
	}
	survivor := 0
	if v.Primary {
		if !b.canPromote(vb, func(string) bool { return false }) {
			return u // nothing to fail over to: the bundle is pending again
		}
		u.Promote, v.Promoted, survivor = true, true, 1
	}
	nodes := placedOf(&vb.Replicas[survivor])
	prim := GangResult{Placed: true, Nodes: nodes, SpansAZ: b.spansAZ(nodes)}
	u.SetDegradations = true
	u.Degradations = append(b.degradations(&vb.Spec, prim, nil), fsm.Degradation{
		Code: fsm.DegradeNoBackup, Message: "backup evicted by " + preemptor.ID(),
	})
	return u
}

func roleName(primary bool) string {
	if primary {
		return fsm.RolePrimary
	}
	return fsm.RoleBackup
}
