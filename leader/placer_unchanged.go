package leader

import (
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// unchangedTries remembers, leader-locally, the unplaceable bundles tried
// against the present cluster whose record came out the same. Such a try
// commits nothing (scheduler: an identical explanation is no update), so
// the bundle's attempt index stays before the cluster change and the queue
// offers it on every pass. With more of them than one plan holds, the same
// first ones filled every pass, and the bundles queued behind them, new
// ones included, were never tried: pending for good.
type unchangedTries struct {
	cluster uint64
	modify  map[string]uint64 // bundle id: the version that was tried
}

// skip takes out of the queue the bundles already tried against cluster
// in their present version.
func (u *unchangedTries) skip(queue []*fsm.Bundle, cluster uint64) []*fsm.Bundle {
	if u.cluster != cluster || len(u.modify) == 0 {
		return queue
	}
	out := queue[:0:0]
	for _, b := range queue {
		if m, ok := u.modify[b.ID()]; ok && m == b.ModifyIndex && b.State == fsm.StateUnplaceable {
			continue
		}
		out = append(out, b)
	}
	return out
}

// remember notes the bundles of tried that were unplaceable before the
// cluster's last change and that batch leaves as they were; it returns how
// many it added.
func (u *unchangedTries) remember(batch *scheduler.Batch, tried []*fsm.Bundle, cluster uint64) int {
	if u.cluster != cluster {
		u.cluster, u.modify = cluster, nil // tries against an older cluster say nothing now
	}
	added := 0
	for _, b := range tried {
		if b.State != fsm.StateUnplaceable || b.AttemptIndex >= cluster || batch.Updated(b.ID()) {
			continue
		}
		if u.modify == nil {
			u.modify = map[string]uint64{}
		}
		if m, ok := u.modify[b.ID()]; !ok || m != b.ModifyIndex {
			added++
		}
		u.modify[b.ID()] = b.ModifyIndex
	}
	return added
}
