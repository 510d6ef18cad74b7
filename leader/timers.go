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

// pass fires every startAt and stopAt due at the leader's clock.
func (t *timers) pass(ctx context.Context) {
	if req := dueTimers(t.l.store.State(), t.l.clock.Now().UnixNano()); req != nil {
		t.l.applyLogged(ctx, fsm.TimerType, req)
	}
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
