package fsm

import "slices"

// A version that crashes right after it starts reads running first: the
// exec driver reports a generation's first start at once, and failed only
// when the process exits. Counting that report as available let the
// rollout relaunch the next replica before the first one crashed, one
// replica more than maxUnavailable down. Under SettleRollout a replica the
// rollout relaunches joins Bundle.Settling, which the rollout counts
// unavailable, until the leader has seen it run for its settle window and
// says so (RolloutSettledRequest). The FSM has no clock, so the leader
// times the window (leader/rollouts.go); a new leader times it again from
// the start, which delays the rollout and never lets it run ahead.

// settling is one bundle a RolloutSettled command changes: its copy being
// written and its settling replicas' runs (SettlingRuns).
type settling struct {
	b       *Bundle
	runs    map[int]uint64
	settled bool
}

// applyRolloutSettled takes the named replicas out of their bundles'
// Settling when they still run the run the leader timed, and moves those
// rollouts on.
func (f *FSM) applyRolloutSettled(t *tx, req *RolloutSettledRequest) (any, error) {
	t.advance(req.Now)
	t.relaunchUnavailable, t.settleRollout = true, true // only leaders that set both send this
	var order []*settling
	byID := map[string]*settling{}
	for _, s := range req.Settled {
		w, seen := byID[s.BundleID]
		if !seen {
			if b := t.Bundle(s.BundleID); b != nil && !b.Deleting && len(b.Settling) > 0 {
				w = &settling{b: cloneBundle(b), runs: t.SettlingRuns(b)}
				order = append(order, w)
			}
			byID[s.BundleID] = w
		}
		if w == nil {
			continue
		}
		// A run written after the one the leader timed (a failed report,
		// a relaunch) has not been timed: the entry is stale.
		if idx, runs := w.runs[s.Slot]; runs && idx <= s.Index {
			w.b.dropSettling(func(slot int) bool { return slot == s.Slot })
			delete(w.runs, s.Slot)
			w.settled = true
		}
	}
	for _, w := range order {
		if w.settled {
			t.advanceRollout(w.b)
			t.putBundle(w.b)
		}
	}
	return nil, nil
}

// SettlingRuns maps each of b's settling replicas that runs (every job of
// it reports running) to the highest modify index of its assignments: the
// run the leader times. Any later write to them starts another run.
func (s *State) SettlingRuns(b *Bundle) map[int]uint64 {
	if len(b.Settling) == 0 {
		return nil
	}
	runs := map[int]uint64{}
	for _, slot := range b.Settling {
		if r := b.replicaBySlot(slot); r != nil && replicaAvailable(r) {
			runs[slot] = 0
		}
	}
	for _, a := range s.BundleAssignments(b.ID()) {
		idx, ok := runs[a.Replica]
		switch {
		case !ok || a.Desired != DesiredRun:
		case a.Status != JobRunning:
			delete(runs, a.Replica)
		default:
			runs[a.Replica] = max(idx, a.ModifyIndex)
		}
	}
	return runs
}

// dropSettling removes the settling slots gone says so of; none left is
// nil, as a bundle that never settled anything.
func (b *Bundle) dropSettling(gone func(slot int) bool) {
	b.Settling = slices.DeleteFunc(b.Settling, gone)
	if len(b.Settling) == 0 {
		b.Settling = nil
	}
}

// SettlingBundles are the bundles with a replica settling, by id: what the
// leader times, read from an index so that its pass does not grow with
// the bundles.
func (s *State) SettlingBundles() []*Bundle {
	return all[Bundle](s.txn, tableBundles, "settling", "y")
}

func settlingKey(b *Bundle) string {
	if len(b.Settling) > 0 {
		return "y"
	}
	return ""
}
