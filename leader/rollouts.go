package leader

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/amserver/amserver/fsm"
)

// defaultRolloutSettle is how long a replica a rollout relaunched must run
// before the rollout counts it available: the exec driver's rule for a
// restart, which reads failed until a run has stayed up 5 s.
const defaultRolloutSettle = 5 * time.Second

// settleRetry spaces the proposals of one run that is due but still
// settling (a command that failed, or one the FSM found stale).
const settleRetry = time.Second

// rollouts times the settle window of the replicas service rollouts
// relaunched (fsm.Bundle.Settling) and names those that ran through it in
// a RolloutSettled command, which moves the rollouts on (fsm/rollout_settle.go).
// The FSM has no clock; the worker reports a first start as running at
// once, and a version that crashes right after it starts reads running
// until it does. The window starts when this leader first sees a run; it
// keeps no other memory, so a new leader starts every window again, which
// delays a rollout and never lets it take down more than maxUnavailable.
type rollouts struct {
	l *Leader
	// timed are the runs being timed: bundle id → slot → run.
	timed map[string]map[int]timedRun
	// held: a server did not apply RolloutSettled at the last proposal
	// due (levelMet), which was logged.
	held bool
}

// timedRun is one settling replica's run as this leader saw it.
type timedRun struct {
	index    uint64    // fsm.State.SettlingRuns': a later write is another run
	since    time.Time // when this leader first saw the run
	proposed time.Time // when it last proposed the run settled (zero: never)
}

func (r *rollouts) Name() string { return "rollouts" }

func (r *rollouts) Run(ctx context.Context) {
	for {
		watch := r.l.store.WatchCh()
		began := time.Now()
		wait := r.pass(ctx)
		if !waitPaced(ctx, watch, wait, began) {
			return
		}
	}
}

// pass proposes the runs that have lasted the window and returns how long
// until the next one will have (at most settleRetry, at least a
// millisecond, so that a pass due now does not spin).
func (r *rollouts) pass(ctx context.Context) time.Duration {
	st, now := r.l.store.State(), r.l.clock.Now()
	window := r.l.cfg.RolloutSettle
	wait := settleRetry
	timed := map[string]map[int]timedRun{}
	req := &fsm.RolloutSettledRequest{Now: now.UnixNano()}
	for _, b := range st.SettlingBundles() {
		if b.Deleting {
			continue
		}
		runs := st.SettlingRuns(b)
		seen, cur := r.timed[b.ID()], map[int]timedRun{}
		for _, slot := range slices.Sorted(maps.Keys(runs)) {
			run, ok := seen[slot]
			if !ok || run.index != runs[slot] {
				run = timedRun{index: runs[slot], since: now}
			}
			if left := run.since.Add(window).Sub(now); left > 0 {
				wait = min(wait, left)
			} else if now.Sub(run.proposed) >= settleRetry {
				req.Settled = append(req.Settled, fsm.SettledReplica{BundleID: b.ID(), Slot: slot, Index: run.index})
				run.proposed = now
			}
			cur[slot] = run
		}
		timed[b.ID()] = cur
	}
	r.timed = timed
	if len(req.Settled) > 0 && r.levelMet() {
		r.l.applyLogged(ctx, fsm.RolloutSettledType, req)
	}
	return max(wait, time.Millisecond)
}

const (
	msgRolloutsHeld = "rollouts wait: a server of the Raft configuration does not apply RolloutSettled " +
		"(it runs an older version, or is not alive in gossip); finish the upgrade"
	msgRolloutsResumed = "rollouts go on: every server applies RolloutSettled"
)

// levelMet reports whether every server applies RolloutSettled: an older
// one would panic at it. Only replaces of that level start settling
// replicas, but the level can drop after (a server added back with the
// older binary): the runs due are then held, proposed again settleRetry
// later as after a failed proposal, and the rollouts wait. The hold is
// logged once, and its end.
func (r *rollouts) levelMet() bool {
	ok := r.l.cfg.ServersApply(fsm.LevelRolloutSettle)
	switch {
	case !ok && !r.held:
		r.l.log.Warn(msgRolloutsHeld)
	case ok && r.held:
		r.l.log.Info(msgRolloutsResumed)
	}
	r.held = !ok
	return ok
}
