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
// ttlAfterFinished did.
func (t *timers) pass(ctx context.Context) {
	st, now := t.l.store.State(), t.l.clock.Now().UnixNano()
	if req := dueTimers(st, now); req != nil {
		t.l.applyLogged(ctx, fsm.TimerType, req)
	}
	if req := dueBatch(st, now); req != nil {
		t.l.applyLogged(ctx, fsm.BatchTimerType, req)
	}
}

// dueBatch lists the batch jobs due for a restart and the finished batch
// bundles due for deletion at now.
func dueBatch(st *fsm.State, now int64) *fsm.BatchTimerRequest {
	req := &fsm.BatchTimerRequest{Now: now}
	for _, b := range st.Bundles("", "") {
		if !b.Spec.IsBatch() {
			continue
		}
		req.Restart = append(req.Restart, b.DueRestarts(now)...)
		if b.Expired(now) {
			req.Expire = append(req.Expire, b.ID())
		}
	}
	if len(req.Restart) == 0 && len(req.Expire) == 0 {
		return nil
	}
	return req
}

// dueTimers lists the bundles whose effective start or stop (startAt and
// stopAt, moved by their jobs' template launch times) has passed at now.
func dueTimers(st *fsm.State, now int64) *fsm.TimerRequest {
	req := &fsm.TimerRequest{Now: now}
	for _, b := range st.Bundles("", "") {
		if b.State == fsm.StateScheduled && b.Spec.EffectiveStart() <= now {
			req.Start = append(req.Start, b.ID())
		}
		if stop := b.Spec.EffectiveStop(); !b.Deleting && stop != 0 && stop <= now {
			req.Stop = append(req.Stop, b.ID())
		}
	}
	if len(req.Start) == 0 && len(req.Stop) == 0 {
		return nil
	}
	return req
}
