package leader

import (
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

// batchSpec is a one-job batch bundle with a restart policy and a ttl.
func batchSpec(attempts int, delay, ttl time.Duration, mode string) fsm.BundleSpec {
	s := spec("b", "p", fsm.PrioritySilver, 100)
	s.Kind = fsm.KindBatch
	s.Restart = &fsm.RestartPolicy{Attempts: attempts, Delay: int64(delay), Mode: mode}
	s.TTLAfterFinished = int64(ttl)
	return s
}

// exit reports the batch job's exit, as its worker would.
func (e *env) exit(code int) {
	e.t.Helper()
	a := e.store.State().BundleAssignments("b")[0]
	e.store.ok(fsm.AssignmentStatusType, &fsm.AssignmentStatusRequest{
		NodeID: a.NodeID, AssignmentID: a.ID, Status: fsm.JobExited, ExitCode: code, Now: e.now(), Generation: a.Generation})
}

// TestBatchRestartTimer: a non-zero exit is restarted when the restart
// delay has passed on the leader's clock and not before, by a new
// assignment generation; attempts count; after the last attempt the bundle
// fails, and ttlAfterFinished later the timer starts its deletion.
func TestBatchRestartTimer(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 0, fsm.NodeReady)
	e.create(batchSpec(1, 30*time.Second, time.Hour, fsm.RestartFail))
	e.place("b", 0, "n1")
	tm := &timers{l: e.l}
	gen := e.store.State().BundleAssignments("b")[0].Generation
	e.exit(3)
	e.clock.Advance(29 * time.Second)
	tm.pass(e.ctx)
	if a := e.store.State().BundleAssignments("b")[0]; a.Generation != gen || a.Status != fsm.JobExited {
		t.Fatalf("restarted before its delay: %+v", a)
	}
	e.clock.Advance(time.Second)
	tm.pass(e.ctx)
	a := e.store.State().BundleAssignments("b")[0]
	job := e.get("b").Replicas[0].Jobs[0]
	if a.Generation != gen+1 || a.Status != fsm.JobAssigned || job.Attempts != 1 || job.RestartAt != 0 {
		t.Fatalf("after the delay: assignment %+v, job %+v", a, job)
	}
	e.exit(4)
	b := e.get("b")
	if b.State != fsm.StateFailed || b.Replicas[0].Jobs[0].ExitCode != 4 || len(e.store.State().Reservations()) != 0 {
		t.Fatalf("after the last attempt: state %s, job %+v, reservations %d", b.State, b.Replicas[0].Jobs[0], len(e.store.State().Reservations()))
	}
	e.clock.Advance(59 * time.Minute)
	tm.pass(e.ctx)
	if got := e.get("b").State; got != fsm.StateFailed {
		t.Fatalf("deleted before its ttl: %s", got)
	}
	e.clock.Advance(time.Minute)
	tm.pass(e.ctx)
	if got := e.get("b").State; got != fsm.StateDeleting {
		t.Fatalf("ttl passed, state %s", got)
	}
	if req := dueBatch(e.store.State(), e.now()); req != nil {
		t.Fatalf("a deleting bundle is named again: %+v", req)
	}
}

// TestBatchDelayModeKeepsRestarting: mode delay restarts past attempts.
func TestBatchDelayModeKeepsRestarting(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 0, fsm.NodeReady)
	e.create(batchSpec(1, time.Second, 0, fsm.RestartDelay))
	e.place("b", 0, "n1")
	tm := &timers{l: e.l}
	for i := 1; i <= 3; i++ {
		e.exit(1)
		e.clock.Advance(time.Second)
		tm.pass(e.ctx)
		if job := e.get("b").Replicas[0].Jobs[0]; int(job.Attempts) != i || e.get("b").State == fsm.StateFailed {
			t.Fatalf("round %d: job %+v, state %s", i, job, e.get("b").State)
		}
	}
	e.exit(0)
	if b := e.get("b"); b.State != fsm.StateComplete || b.FinishTime != e.now() {
		t.Fatalf("exit 0: state %s finish %d", b.State, b.FinishTime)
	}
	if req := dueBatch(e.store.State(), e.now()+int64(1000*time.Hour)); req != nil {
		t.Fatalf("no ttl, yet the bundle expires: %+v", req)
	}
}
