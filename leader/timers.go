package leader

import (
	"context"
	"math"
	"time"

	"github.com/amserver/amserver/fsm"
)

// timerScanInterval is how often the leader scans for startAt/stopAt, and
// so how late one fires when its bundle was written after the last scan.
const timerScanInterval = time.Second

// timers fires startAt and stopAt with the leader's clock: it names the due
// bundles in a Timer command and the FSM checks each against the command's
// time, so a stale or early command changes nothing.
type timers struct {
	l *Leader
	// What the last pass found, to skip the next ones that cannot find
	// anything: the bundles table's index and the earliest timer ahead.
	seen uint64
	next int64
}

func (t *timers) Name() string { return "timers" }

func (t *timers) Run(ctx context.Context) {
	wake := time.NewTimer(timerScanInterval)
	defer wake.Stop()
	for {
		t.pass(ctx)
		wake.Reset(nextWait(t.l.clock.Now().UnixNano(), t.next))
		select {
		case <-ctx.Done():
			return
		case <-wake.C:
		}
	}
}

// nextWait is how long the timers duty sleeps after a pass at now: until
// the earliest timer ahead, so a startAt fires on time rather than up to a
// scan late, and at most timerScanInterval (new bundles may bring a timer
// forward). A timer already due was just proposed; if that failed, the
// next scan proposes it again, not a tight loop.
func nextWait(now, next int64) time.Duration {
	if d := time.Duration(next - now); d > 0 && d < timerScanInterval {
		return d
	}
	return timerScanInterval
}

// pass fires every startAt and stopAt due at the leader's clock, and the
// batch timers: restarts whose delay passed, finished bundles whose
// ttlAfterFinished did. Reading every bundle each second was a fifth of a
// loaded leader's CPU at 100,000 bundles (issue 21): a pass reads the
// bundles' timer index up to the first timer ahead, and only when the
// bundles changed, that timer came due, or the last pass proposed
// something (which may have failed to commit).
func (t *timers) pass(ctx context.Context) {
	st, now := t.l.store.State(), t.l.clock.Now().UnixNano()
	idx := st.Index(timerTables...)
	if idx == t.seen && now < t.next {
		return // nothing can have come due
	}
	d := dueAt(st, now)
	t.seen, t.next = idx, d.next
	if d.timers != nil {
		t.l.applyLogged(ctx, fsm.TimerType, d.timers)
		t.seen = 0
	}
	if d.batchReq != nil {
		t.l.applyLogged(ctx, fsm.BatchTimerType, d.batchReq)
		t.seen = 0
	}
}

// timerTables hold what the timers read: a change there may bring a
// timer forward.
var timerTables = []string{"bundles"}

// due is what one read of the timer index found at now: the requests to
// propose (nil when none) and the earliest timer after now (math.MaxInt64
// when none).
type due struct {
	timers   *fsm.TimerRequest
	batchReq *fsm.BatchTimerRequest
	next     int64
}

// dueAt lists what is due at now: startAt and stopAt timers, and batch
// restarts and expiries, from the bundles whose next timer has passed.
func dueAt(st *fsm.State, now int64) due {
	d := due{timers: &fsm.TimerRequest{Now: now}, batchReq: &fsm.BatchTimerRequest{Now: now}, next: math.MaxInt64}
	for b := range st.BundlesByTimer() {
		if at := b.NextTimer(); at > now {
			d.next = at
			break
		}
		addDueTimers(d.timers, b, now)
		addDueBatch(d.batchReq, b, now)
	}
	if len(d.timers.Start) == 0 && len(d.timers.Stop) == 0 {
		d.timers = nil
	}
	if len(d.batchReq.Restart) == 0 && len(d.batchReq.Expire) == 0 {
		d.batchReq = nil
	}
	return d
}

// dueBatch lists the batch jobs due for a restart and the finished batch
// bundles due for deletion at now.
func dueBatch(st *fsm.State, now int64) *fsm.BatchTimerRequest {
	return dueAt(st, now).batchReq
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
// stopAt, moved by their jobs' template launch times) has passed at now,
// and returns the earliest of them still ahead (math.MaxInt64: none).
func addDueTimers(req *fsm.TimerRequest, b *fsm.Bundle, now int64) int64 {
	next := int64(math.MaxInt64)
	if b.State == fsm.StateScheduled {
		if start := b.Spec.EffectiveStart(); start <= now {
			req.Start = append(req.Start, b.ID())
		} else {
			next = start
		}
	}
	if stop := b.Spec.EffectiveStop(); !b.Deleting && stop != 0 {
		if stop <= now {
			req.Stop = append(req.Stop, b.ID())
		} else {
			next = min(next, stop)
		}
	}
	return next
}
