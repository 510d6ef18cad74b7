package scheduler

import (
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// DryRunResult is a dry run's answer: the bundle as it would be (replicas,
// grants, degradations, state), the explanation of what could not be
// placed (the primary's when it does not fit, else the backup's when there
// is none; nil when everything fits), and the replicas of lower-band
// bundles a preemption would evict to place it, in the order preferred.
type DryRunResult struct {
	Bundle  *fsm.Bundle
	Explain *fsm.Explain
	Victims []Victim
}

// DryRun is Plan without the victims.
func (sn *Snapshot) DryRun(spec fsm.BundleSpec, seed uint64) (*fsm.Bundle, *fsm.Explain) {
	r := sn.Plan(spec, seed)
	return r.Bundle, r.Explain
}

// Plan places a spec as a new bundle would be placed, with the same code
// path and seed as the leader's batch: a primary that does not fit and may
// preempt (Preempts) searches for victims as the leader's first pass over
// the new bundle does, so the plan shows the evictions the create would
// make instead of calling the bundle unplaceable. A bundle with the same id
// that already exists is treated as replaced: its reservations are released
// hypothetically first, and it is no victim of itself. Nothing is
// committed.
func (sn *Snapshot) Plan(spec fsm.BundleSpec, seed uint64) DryRunResult {
	spec = cloneSpec(spec)
	fsm.Normalize(&spec)
	b := &fsm.Bundle{Spec: spec, Epoch: 1}
	for slot := range spec.Replicas() {
		r := fsm.Replica{Slot: slot, Role: spec.RoleAt(slot)}
		for _, j := range spec.Jobs {
			r.Jobs = append(r.Jobs, fsm.JobPlacement{Name: j.Name})
		}
		b.Replicas = append(b.Replicas, r)
	}
	batch := sn.NewBatch(seed)
	if old := sn.idx.view.Bundle(spec.ID); old != nil {
		for _, k := range old.Held() {
			ledger.Release(batch.overlay, k)
		}
		// Marked as changed by this batch (with no part), the old version
		// is no preemption candidate (victimOf).
		batch.updated = map[string]bool{spec.ID: true}
	}
	var res Result
	if Preempts(b) {
		res = batch.Preempt(b)
	}
	if res.Update == nil {
		res = batch.Place(b) // as the leader's placeOne: why it does not fit without evicting
	}
	applyResult(b, res)
	ex := res.Explain
	if ex == nil {
		ex = res.BackupExplain
	}
	return DryRunResult{Bundle: b, Explain: ex, Victims: res.Victims}
}

// Preempts says whether a bundle's placement may evict lower bands (DESIGN
// §3.5): a resilient bundle whose primary is incomplete, in a band above
// bronze. The leader also rations the searches (placer.mayPreempt).
func Preempts(b *fsm.Bundle) bool {
	return b.Spec.Kind == "" && len(b.Replicas) > 0 && !b.Replicas[0].Complete() &&
		b.Spec.EffectiveBand() < fsm.Band(fsm.PriorityBronze)
}

// cloneSpec copies what Normalize writes to, so the caller's spec is kept.
func cloneSpec(s fsm.BundleSpec) fsm.BundleSpec {
	s.Jobs = slices.Clone(s.Jobs)
	if s.Resilience != nil {
		r := *s.Resilience
		s.Resilience = &r
	}
	if s.Restart != nil {
		r := *s.Restart
		s.Restart = &r
	}
	return s
}

// applyResult fills a dry-run bundle as the FSM would after committing.
func applyResult(b *fsm.Bundle, res Result) {
	if u := res.Update; u != nil {
		for _, p := range u.Place {
			// A dry run's replicas sit at their slots (no promotion yet).
			r := &b.Replicas[p.Slot]
			for j := range r.Jobs {
				if r.Jobs[j].Name == p.Job {
					r.Jobs[j] = fsm.JobPlacement{Name: p.Job, NodeID: p.Node, Grant: p.Grant, Status: fsm.JobAssigned}
				}
			}
		}
		b.Explain = u.Explain
	}
	b.Degradations = res.Degradations
	for i := range b.Replicas {
		b.Replicas[i].State = fsm.StatePending
		if b.Replicas[i].Complete() {
			b.Replicas[i].State = fsm.StatePlaced
		}
	}
	switch {
	case b.Spec.IsService() && !res.PrimaryPlaced && len(res.Incomplete) < len(b.Replicas):
		b.State = fsm.StateDegraded
	case !res.PrimaryPlaced:
		b.State = fsm.StateUnplaceable
	case len(b.Degradations) > 0 || (len(b.Replicas) > 1 && !res.BackupPlaced):
		b.State = fsm.StateDegraded
	default:
		b.State = fsm.StatePlaced
	}
}
