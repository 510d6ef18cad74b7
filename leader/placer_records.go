package leader

import (
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// heldTry is what a bundle whose failure record is held was tried
// against: the cluster (nodes and pools, whose index moves with every
// node change and every reservation freed) and its own version.
type heldTry struct {
	cluster, modify uint64
}

// holdRecords says whether a plan that only records failures waits for
// recordCoalesce to pass since the last such commit; the Run loop then
// passes again when it does (or sooner, on a change). Records for a whole
// plan (waiting counts those already held) commit at once: under a burst
// of creates into a full pool the held bundles piled up faster than one
// plan an interval took them, and every pass read and sorted them all
// again (issue 19); a full plan is one Raft entry for hundreds of creates.
func (p *placer) holdRecords(batch *scheduler.Batch, waiting int, now time.Time) bool {
	if !batch.OnlyExplains() {
		return false
	}
	if due := p.holdLeft(now); due > 0 && waiting < maxBundlesPerPlan {
		p.recordDue = due
		return true
	}
	p.recordedAt = now
	return false
}

// holdLeft is how long records are still held at now (0: they may commit).
func (p *placer) holdLeft(now time.Time) time.Duration {
	if p.recordedAt.IsZero() {
		return 0
	}
	return max(p.recordedAt.Add(recordCoalesce).Sub(now), 0)
}

// hold remembers the bundles of a held plan: each failed against cluster.
func (p *placer) hold(queue []*fsm.Bundle, cluster uint64) {
	if p.held == nil {
		p.held = make(map[string]heldTry, len(queue))
	}
	for _, b := range queue {
		p.held[b.ID()] = heldTry{cluster: cluster, modify: b.ModifyIndex}
	}
}

// splitHeld takes out of the queue, while records are held, the bundles
// that already failed against this very cluster in their present version:
// placing them again would fail again and be held again. Each create into
// a full pool woke a pass that re-placed every such bundle (issue 19). The
// bundles taken out are returned, to ride along with a plan that commits.
func (p *placer) splitHeld(queue []*fsm.Bundle, cluster uint64, now time.Time) (rest, held []*fsm.Bundle) {
	left := p.holdLeft(now)
	if len(p.held) == 0 || left == 0 {
		return queue, nil
	}
	rest = queue[:0:0]
	for _, b := range queue {
		if h, ok := p.held[b.ID()]; ok && h == (heldTry{cluster: cluster, modify: b.ModifyIndex}) {
			held = append(held, b)
			continue
		}
		rest = append(rest, b)
	}
	if len(rest) == 0 {
		p.recordDue = left // pass again when the held records may commit
	}
	return rest, held
}
