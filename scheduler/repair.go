package scheduler

import (
	"maps"
	"slices"
	"strings"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// Repair re-places what a bundle lost with nodes that went down or left
// (DESIGN §4). lost holds the ids of those nodes. The bundle gets one update
// in its own plan part:
//
//   - every job on a lost node is released, whatever else happens, so no
//     reservation outlives its node;
//   - when the primary lost jobs and the backup is complete on healthy
//     nodes, the backup is promoted (the FSM swaps the replicas and advances
//     the epoch) and the broken replica becomes the backup;
//   - the replicas are then completed as Place would: the primary's missing
//     jobs as a gang, then the backup's down the resilience ladder relative
//     to the (new) primary. Jobs still on healthy nodes stay and pin their
//     co-location groups, so only the lost jobs move and the intra-replica
//     rules hold together with the survivors.
//
// When the primary cannot be completed the update still carries the
// releases, plus the explanation (the FSM then derives pending or
// unplaceable). A bundle with nothing on a lost node gets no update; one
// being deleted only has its lost jobs released.
func (b *Batch) Repair(bundle *fsm.Bundle, lost map[string]bool) Result {
	gone := func(node string) bool { return lost[node] }
	hit := hitJobs(bundle, gone)
	if len(hit) == 0 {
		return unchanged(bundle)
	}
	release, keys := releases(bundle, hit)
	b.releaseKeys(keys)
	reason := b.lossReason(bundle, gone)
	if bundle.Deleting {
		res := unchanged(bundle)
		res.Update = &fsm.BundleUpdate{BundleID: bundle.ID(), Release: release, Reason: reason}
		b.addPart(res.Update)
		return res
	}
	promote := len(hit[0]) > 0 && b.canPromote(bundle, gone)
	restore := b.exclude(slices.Sorted(maps.Keys(lost)))
	res, places := b.fill(afterLoss(bundle, gone, promote))
	restore()
	res.Update = moveUpdate(bundle, &res, promote, release, places, reason)
	b.addPart(res.Update)
	return res
}

// unchanged describes a bundle a decision leaves as it is.
func unchanged(bundle *fsm.Bundle) Result {
	return Result{
		BundleID:      bundle.ID(),
		PrimaryPlaced: len(bundle.Replicas) > 0 && bundle.Replicas[0].Complete(),
		BackupPlaced:  len(bundle.Replicas) > 1 && bundle.Replicas[1].Complete(),
		Degradations:  bundle.Degradations,
	}
}

// hitJobs maps a replica's index in bundle.Replicas to its placed jobs on
// nodes for which gone holds; replicas with none are absent.
func hitJobs(bundle *fsm.Bundle, gone func(string) bool) map[int][]string {
	out := map[int][]string{}
	for i, r := range bundle.Replicas {
		for _, j := range r.Jobs {
			if j.Placed() && gone(j.NodeID) {
				out[i] = append(out[i], j.Name)
			}
		}
	}
	return out
}

// releases turns hit jobs into the update's releases and the ledger keys,
// in replica then job order, so plans are deterministic.
func releases(bundle *fsm.Bundle, hit map[int][]string) ([]fsm.SlotJob, []ledger.Key) {
	var out []fsm.SlotJob
	var keys []ledger.Key
	for _, i := range slices.Sorted(maps.Keys(hit)) {
		slot := bundle.Replicas[i].Slot
		for _, job := range hit[i] {
			out = append(out, fsm.SlotJob{Slot: slot, Job: job})
			keys = append(keys, ledger.Key{Bundle: bundle.ID(), Replica: slot, Job: job})
		}
	}
	return out, keys
}

// canPromote reports whether the backup can take over at once: the bundle
// is resilient and its backup complete, with every job on a node that is
// registered, not down or left, not gone and not removed by the batch. A
// suspect node still counts: nothing is moved off a suspect node (§4).
func (b *Batch) canPromote(bundle *fsm.Bundle, gone func(string) bool) bool {
	if bundle.Spec.Resilience == nil || len(bundle.Replicas) < 2 || !bundle.Replicas[1].Complete() {
		return false
	}
	for _, j := range bundle.Replicas[1].Jobs {
		n := b.snap.idx.node(j.NodeID)
		if n == nil || gone(j.NodeID) || slices.Contains(b.removed, j.NodeID) {
			return false
		}
		if s := n.node.Status; s != fsm.NodeReady && s != fsm.NodeSuspect {
			return false
		}
	}
	return true
}

// afterLoss is a copy of the bundle as the FSM will see it once the update's
// promotion and releases apply: replicas swapped when promoting, jobs on
// gone nodes unplaced. fill completes it; the caller's bundle is shared
// state and stays untouched.
func afterLoss(bundle *fsm.Bundle, gone func(string) bool, promote bool) *fsm.Bundle {
	cp := *bundle
	cp.Replicas = make([]fsm.Replica, len(bundle.Replicas))
	for i, r := range bundle.Replicas {
		r.Jobs = slices.Clone(r.Jobs)
		for k := range r.Jobs {
			if r.Jobs[k].Placed() && gone(r.Jobs[k].NodeID) {
				r.Jobs[k] = fsm.JobPlacement{Name: r.Jobs[k].Name}
			}
		}
		cp.Replicas[i] = r
	}
	if promote {
		cp.Replicas[0], cp.Replicas[1] = cp.Replicas[1], cp.Replicas[0]
		cp.Replicas[0].Role, cp.Replicas[1].Role = fsm.RolePrimary, fsm.RoleBackup
	}
	return &cp
}

// moveUpdate composes a repair's or a drain's update around fill's result.
// Without a primary the degradations are left as they are (as Place does)
// and the explanation is recorded.
func moveUpdate(bundle *fsm.Bundle, res *Result, promote bool, release []fsm.SlotJob, places []fsm.Place, reason string) *fsm.BundleUpdate {
	u := &fsm.BundleUpdate{BundleID: bundle.ID(), Promote: promote, Release: release, Place: places, Reason: reason}
	if bundle.Spec.IsService() {
		// A service's replicas are peers: what fits is placed, the rest
		// stay missing with the explanation (fillService).
		u.SetDegradations, u.Degradations, u.Explain = true, res.Degradations, res.Explain
		return u
	}
	if res.PrimaryPlaced {
		u.SetDegradations, u.Degradations = true, res.Degradations
	} else {
		u.Explain = res.Explain
		res.Degradations = bundle.Degradations
	}
	return u
}

// lossReason names the bundle's lost nodes and their status for events:
// "node n1 down", "node n1 down, node n4 left". A node the snapshot does not
// know as down or left (gossip saw it first, or it was deregistered) is
// "lost".
func (b *Batch) lossReason(bundle *fsm.Bundle, gone func(string) bool) string {
	var nodes []string
	for _, r := range bundle.Replicas {
		for _, j := range r.Jobs {
			if j.Placed() && gone(j.NodeID) {
				nodes = append(nodes, j.NodeID)
			}
		}
	}
	slices.Sort(nodes)
	var parts []string
	for _, id := range slices.Compact(nodes) {
		status := "lost"
		if n := b.snap.idx.node(id); n != nil && (n.node.Status == fsm.NodeDown || n.node.Status == fsm.NodeLeft) {
			status = n.node.Status
		}
		parts = append(parts, "node "+id+" "+status)
	}
	return strings.Join(parts, ", ")
}
