package scheduler

import (
	"strings"

	"github.com/amserver/amserver/fsm"
)

// Heal proposes a better backup for a bundle whose backup breaks some of its
// forbids (DESIGN §3.4): when a placement that honours more of them fits
// now, the update places the backup's jobs there and releases the old ones
// (make-before-break: the new placement is found while the old backup still
// holds its resources, so it never counts on capacity the old one frees).
// "Honours more" is by severity: sharing a node is worse than sharing an AZ,
// which is worse than sharing a cloud. A bundle with no backup at all is
// placed as by Place; a complete, healthy one gets no update.
func (b *Batch) Heal(bundle *fsm.Bundle) Result {
	res := Result{BundleID: bundle.ID()}
	spec := &bundle.Spec
	if spec.IsService() {
		return b.Place(bundle) // no backup to heal: complete what is missing
	}
	if bundle.Deleting || spec.Resilience == nil || len(bundle.Replicas) < 2 || !bundle.Replicas[0].Complete() {
		return res
	}
	if !bundle.Replicas[1].Complete() {
		return b.Place(bundle)
	}
	seed := b.bundleSeed(bundle)
	prim := b.placeReplica(spec, &bundle.Replicas[0], Forbid{}, seed, true)
	back := b.placeReplica(spec, &bundle.Replicas[1], Forbid{}, seed, true)
	now := b.degradations(spec, prim, &back)
	res.PrimaryPlaced, res.BackupPlaced, res.Degradations = true, true, now
	if severity(now) == 0 {
		return res
	}
	fresh := fsm.Replica{Slot: bundle.Replicas[1].Slot, Jobs: make([]fsm.JobPlacement, len(spec.Jobs))}
	for i, j := range spec.Jobs {
		fresh.Jobs[i].Name = j.Name
	}
	moved := b.climb(spec, &fresh, b.domainsOf(prim.Nodes), derive(seed, hashString("heal")), true)
	if !moved.Placed {
		return res
	}
	next := b.degradations(spec, prim, &moved)
	if severity(next) >= severity(now) {
		return res
	}
	return b.commitHeal(bundle, res, moved, next, now)
}

func (b *Batch) commitHeal(bundle *fsm.Bundle, res Result, moved GangResult, next, now []fsm.Degradation) Result {
	old := bundle.Replicas[1]
	var oldPlaces []fsm.Place
	release := make([]fsm.SlotJob, 0, len(old.Jobs))
	for _, j := range old.Jobs {
		release = append(release, fsm.SlotJob{Slot: old.Slot, Job: j.Name})
		oldPlaces = append(oldPlaces, fsm.Place{Slot: old.Slot, Job: j.Name, Node: j.NodeID, Grant: j.Grant})
	}
	b.release(bundle.ID(), oldPlaces)
	if err := b.reserve(bundle.ID(), moved.Places); err != nil {
		_ = b.reserve(bundle.ID(), oldPlaces) // put the old backup back: nothing changes
		return res
	}
	res.Degradations, res.JobsPlaced = next, len(moved.Places)
	res.Update = &fsm.BundleUpdate{
		BundleID: bundle.ID(), Release: release, Place: moved.Places,
		SetDegradations: true, Degradations: next, Reason: "heal: " + healed(now, next),
	}
	b.addPart(res.Update)
	return res
}

// healed names the codes the move clears.
func healed(before, after []fsm.Degradation) string {
	var gone []string
	for _, d := range before {
		found := false
		for _, a := range after {
			found = found || a.Code == d.Code
		}
		if !found {
			gone = append(gone, d.Code)
		}
	}
	if len(gone) == 0 {
		return "backup moved to a better failure domain"
	}
	return "backup moved, clearing " + strings.Join(gone, ", ")
}
