package leader

import (
	"context"
	"time"

	"github.com/amserver/amserver/fsm"
)

// timerScanInterval bounds how late a startAt/stopAt fires, and how often
// the leader scans for them.
const timerScanInterval = time.Second

// timers fires startAt and stopAt with the leader's clock: it names the due
// bundles in a Timer command and the FSM checks each against the command's
// time, so a stale or early command changes nothing.
type timers struct {
	l *Leader
}

func (t *timers) Name() string { return "timers" }

func (t *timers) Run(ctx context.Context) {
	tick := time.NewTicker(timerScanInterval)
	defer tick.Stop()
	for {
		t.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pass fires every startAt and stopAt due at the leader's clock, and the
// batch timers: restarts whose delay passed, finished bundles whose
// ttlAfterFinished did. It reads the bundles once, as they are stored,
// rather than copying the list twice; it still reads every bundle each
// second (with 100,000 bundles, about a fifth of a loaded leader's CPU in
// issue 21's load test: an index of bundles by their next timer in fsm
// would end that).
func (t *timers) pass(ctx context.Context) {
	st, now := t.l.store.State(), t.l.clock.Now().UnixNano()
	timerReq, batchReq := dueAt(st, now)
	if timerReq != nil {
		t.l.applyLogged(ctx, fsm.TimerType, timerReq)
	}
	if batchReq != nil {
		t.l.applyLogged(ctx, fsm.BatchTimerType, batchReq)
	}
}

// dueAt lists what is due at now: startAt and stopAt timers, and batch
// restarts and expiries, in one read of the bundles.
func dueAt(st *fsm.State, now int64) (*fsm.TimerRequest, *fsm.BatchTimerRequest) {
	timerReq := &fsm.TimerRequest{Now: now}
	batchReq := &fsm.BatchTimerRequest{Now: now}
	for b := range st.BundlesAfter("", "") {
		addDueTimers(timerReq, b, now)
		addDueBatch(batchReq, b, now)
	}
	if len(timerReq.Start) == 0 && len(timerReq.Stop) == 0 {
		timerReq = nil
	}
	if len(batchReq.Restart) == 0 && len(batchReq.Expire) == 0 {
		batchReq = nil
	}
	return timerReq, batchReq
}

// dueBatch lists the batch jobs due for a restart and the finished batch
// bundles due for deletion at now.
func dueBatch(st *fsm.State, now int64) *fsm.BatchTimerRequest {
	_, req := dueAt(st, now)
	return req
}

func addDueBatch(req *fsm.BatchTimerRequest, b *fsm.Bundle, now int64) {
	if !b.Spec.IsBatch() {
		return
	}
	req.Restart = append(req.Restart, b.DueRestarts(now)...)
	if b.Expired(now) {
		req.Expire = append(req.Expire, b.ID())
	}
}

// addDueTimers names b when its effective start or stop (startAt and
// stopAt, moved by their jobs' template launch times) has passed at now.
func addDueTimers(req *fsm.TimerRequest, b *fsm.Bundle, now int64) {
	if b.State == fsm.StateScheduled && b.Spec.EffectiveStart() <= now {
		req.Start = append(req.Start, b.ID())
	}
	if stop := b.Spec.EffectiveStop(); !b.Deleting && stop != 0 && stop <= now {
		req.Stop = append(req.Stop, b.ID())
	}
}
