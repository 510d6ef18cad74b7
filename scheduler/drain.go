package scheduler

import (
	"slices"

	"github.com/amserver/amserver/fsm"
)

// Drain moves a bundle's jobs off a draining node (DESIGN §4: cordon, then
// move every job off the node, promoting the backup first where there is
// one, else place-then-stop). The node is treated as removed for the new
// placements.
//
//   - When the primary has jobs on the node and the backup is complete on
//     healthy nodes (none of them the draining one), the backup is promoted
//     and the deposed primary's jobs on the node move elsewhere, down the
//     resilience ladder relative to the new primary.
//   - Otherwise the jobs of whichever replica is on the node move: the
//     primary's as a gang with its other jobs pinned, the backup's down the
//     ladder.
//
// Releases and placements are one update in one plan part, which the FSM
// applies atomically (releases first, then placements): the new placement
// is reserved at the same index the old one is released and its
// assignment stopped, so from the ledger's view it is make-before-break
// and no job is stopped before its replacement has a home.
//
// Drain is all or nothing per bundle: when some job on the node has nowhere
// to go, the batch is left as it was and the result has no update, only the
// explanation (the node stays draining; the leader retries as capacity
// appears). A bundle being deleted is left to the deletion saga.
func (b *Batch) Drain(bundle *fsm.Bundle, node string) Result {
	gone := func(id string) bool { return id == node }
	hit := hitJobs(bundle, gone)
	if bundle.Deleting || len(hit) == 0 {
		return unchanged(bundle)
	}
	promote := len(hit[0]) > 0 && b.canPromote(bundle, gone)
	after := afterLoss(bundle, gone, promote)
	release, keys := releases(bundle, hit)
	mark := b.overlay.checkpoint()
	// Release first, as the FSM will: the old reservations free nothing a
	// new placement can use on the removed node, but they do count against
	// pool caps, which the FSM checks after the releases.
	b.releaseKeys(keys)
	restore := b.exclude([]string{node})
	res, places := b.fill(after)
	restore()
	if why, stuck := unmoved(bundle, after, hit, res); stuck {
		b.overlay.rollback(mark)
		out := unchanged(bundle)
		out.Explain, out.BudgetExhausted = why, res.BudgetExhausted
		return out
	}
	b.overlay.keep(mark)
	res.Update = moveUpdate(bundle, &res, promote, release, places, "node "+node+" draining")
	b.addPart(res.Update)
	return res
}

// unmoved reports whether some replica that had jobs on the node is not
// complete after fill, with the explanation of why. fill tries the backup
// only once the primary is placed, so a primary that does not fit strands
// every hit.
func unmoved(bundle, after *fsm.Bundle, hit map[int][]string, res Result) (*fsm.Explain, bool) {
	if bundle.Spec.IsService() {
		for i := range hit {
			if slices.Contains(res.Incomplete, bundle.Replicas[i].Slot) {
				return res.Explain, true
			}
		}
		return nil, false
	}
	if !res.PrimaryPlaced {
		return res.Explain, true
	}
	if len(after.Replicas) < 2 {
		return nil, false
	}
	backupSlot := after.Replicas[1].Slot
	for i := range hit {
		if bundle.Replicas[i].Slot == backupSlot && !res.BackupPlaced {
			return res.BackupExplain, true
		}
	}
	return nil, false
}
