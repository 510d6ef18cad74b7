package fsm

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/amserver/amserver/ledger"
)

// A batch bundle's jobs run to completion (DESIGN §2.3, §4). A worker
// reports a job's exit (status exited, with its code); a non-zero exit is
// restarted under the bundle's restart policy, where it runs, by a new
// assignment generation; when every job exited 0 the bundle is complete,
// when a job exhausted its attempts it is failed. Either way its
// reservations are released and its assignments stopped, and the leader
// deletes it ttlAfterFinished later.

// jobExit records a batch job's exit and decides what follows: nothing yet
// (other jobs still run), a restart (now, or at RestartAt), or the end.
// It returns false when a is not a running batch job, and the caller
// mirrors the report as for any job.
func (t *tx) jobExit(a *Assignment, code int32, message string) bool {
	b := t.Bundle(a.BundleID)
	if b == nil || !b.Spec.IsBatch() || b.Outcome != "" || b.Deleting || a.Desired != DesiredRun {
		return false
	}
	job := b.slotJob(a.Replica, a.Job)
	if job == nil || job.NodeID != a.NodeID {
		return false
	}
	cp := cloneBundle(b)
	job = cp.slotJob(a.Replica, a.Job)
	job.Status, job.Message, job.ExitCode = JobExited, message, code
	restart := cp.Spec.Restart
	switch {
	case code == 0:
		if allExitedZero(cp) {
			t.finishBatch(cp, StateComplete, fmt.Sprintf("every job exited 0 (the last: %s)", a.Job))
			return true
		}
	case restart != nil && (int(job.Attempts) < restart.Attempts || restart.Mode == RestartDelay):
		job.RestartAt = t.now + restart.Delay
		if restart.Delay == 0 {
			t.restartJob(cp, a.Replica, job)
		}
	default:
		t.finishBatch(cp, StateFailed, fmt.Sprintf("job %s exited %d after %d restart(s)", a.Job, code, job.Attempts))
		return true
	}
	t.putBundle(cp)
	return true
}

func allExitedZero(b *Bundle) bool {
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Status != JobExited || j.ExitCode != 0 {
				return false
			}
		}
	}
	return true
}

// restartJob restarts a batch job where it runs: its assignment's
// generation moves, which tells the worker to run it again.
func (t *tx) restartJob(b *Bundle, slot int, job *JobPlacement) {
	job.Attempts++
	job.RestartAt = 0
	job.Status, job.Message = JobAssigned, ""
	id := assignmentID(ledger.Key{Bundle: b.ID(), Replica: slot, Job: job.Name}, job.NodeID)
	if a := t.Assignment(id); a != nil && a.Desired == DesiredRun {
		cp := *a
		cp.Generation++
		cp.Status, cp.Message, cp.ExitCode = JobAssigned, "", 0
		t.putAssignment(&cp)
	}
	t.event("jobRestarted", b.ID(), job.NodeID, "bundle %s job %s restarted (attempt %d) after exit %d",
		b.ID(), job.Name, job.Attempts, job.ExitCode)
}

// finishBatch ends a batch bundle: its outcome and finish time are kept,
// its reservations released and its assignments stopped. Jobs keep their
// status, exit code and attempts; those that had not exited read stopped.
func (t *tx) finishBatch(b *Bundle, outcome, why string) {
	for _, k := range b.Held() {
		ledger.Release(t.ledgerStore(), k)
	}
	for _, a := range t.BundleAssignments(b.ID()) {
		t.stopAssignment(a.ID)
	}
	var ran []string
	for i := range b.Replicas {
		for j := range b.Replicas[i].Jobs {
			job := &b.Replicas[i].Jobs[j]
			if job.Status != JobExited {
				job.Status = JobStopped
			}
			if job.Placed() {
				ran = append(ran, assignmentID(ledger.Key{Bundle: b.ID(), Replica: b.Replicas[i].Slot, Job: job.Name}, job.NodeID))
			}
			job.NodeID, job.Grant, job.RestartAt = "", ledger.Grant{}, 0
		}
	}
	b.Ran = ran
	b.Outcome, b.FinishTime = outcome, t.now
	b.Explain, b.Degradations = nil, nil
	t.putBundle(b)
	t.event("bundleFinished", b.ID(), "", "bundle %s %s: %s", b.ID(), outcome, why)
}

// applyBatchTimer fires the batch timers the leader names, each only if
// it is due at the command's clock.
func (f *FSM) applyBatchTimer(t *tx, req *BatchTimerRequest) (any, error) {
	t.advance(req.Now)
	for _, r := range req.Restart {
		b := t.Bundle(r.BundleID)
		if b == nil || b.Outcome != "" || b.Deleting {
			continue
		}
		job := b.slotJob(r.Slot, r.Job)
		if job == nil || job.RestartAt == 0 || job.RestartAt > t.now || !job.Placed() {
			continue
		}
		cp := cloneBundle(b)
		t.restartJob(cp, r.Slot, cp.slotJob(r.Slot, r.Job))
		t.putBundle(cp)
	}
	for _, id := range req.Expire {
		b := t.Bundle(id)
		if b != nil && b.Outcome != "" && b.Spec.TTLAfterFinished > 0 && b.FinishTime+b.Spec.TTLAfterFinished <= t.now {
			t.startDeletion(b)
		}
	}
	return nil, nil
}

// DueRestarts lists the batch jobs whose restart delay has passed at now.
func (b *Bundle) DueRestarts(now int64) []SlotJobRef {
	if !b.Spec.IsBatch() || b.Outcome != "" || b.Deleting {
		return nil
	}
	var out []SlotJobRef
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.RestartAt != 0 && j.RestartAt <= now && j.Placed() {
				out = append(out, SlotJobRef{BundleID: b.ID(), Slot: r.Slot, Job: j.Name})
			}
		}
	}
	return out
}

// NextTimer is the earliest time at which the leader's timers have
// something to do for b (0: nothing, ever, until b changes): its effective
// start while scheduled, its effective stop, a placed batch job's restart,
// a finished batch bundle's expiry. Times before 1 count as 1: due.
// The "timer" index orders bundles by it, so the timers read the due ones
// instead of every bundle each second (issue 21).
func (b *Bundle) NextTimer() int64 {
	var next int64
	consider := func(t int64) {
		if t = max(t, 1); next == 0 || t < next {
			next = t
		}
	}
	if b.State == StateScheduled {
		consider(b.Spec.EffectiveStart())
	}
	if stop := b.Spec.EffectiveStop(); !b.Deleting && stop != 0 {
		consider(stop)
	}
	if b.Spec.IsBatch() && b.Outcome == "" && !b.Deleting {
		for _, r := range b.Replicas {
			for _, j := range r.Jobs {
				if j.RestartAt != 0 && j.Placed() {
					consider(j.RestartAt)
				}
			}
		}
	}
	if b.Outcome != "" && !b.Deleting && b.Spec.TTLAfterFinished > 0 {
		consider(b.FinishTime + b.Spec.TTLAfterFinished)
	}
	return next
}

// timerKey is NextTimer as an index value: zero-padded, so string order is
// time order.
func timerKey(b *Bundle) string {
	if t := b.NextTimer(); t > 0 {
		return fmt.Sprintf("%020d", t)
	}
	return ""
}

// Expired reports whether a finished batch bundle's ttlAfterFinished has
// passed at now.
func (b *Bundle) Expired(now int64) bool {
	return b.Outcome != "" && !b.Deleting && b.Spec.TTLAfterFinished > 0 && b.FinishTime+b.Spec.TTLAfterFinished <= now
}

// exitCode32 is a reported exit code as rows hold it (JobPlacement,
// Assignment): process exit codes and signals fit; anything beyond is
// held at the nearest bound.
func exitCode32(code int) int32 {
	return int32(min(max(code, math.MinInt32), math.MaxInt32))
}

// RanAs is the assignment that job of replica slot last ran as, once the
// batch bundle finished; "" when it has not finished or the job never ran.
func (b *Bundle) RanAs(slot int, job string) string {
	prefix := AssignmentID(b.ID(), slot, job, "")
	for _, id := range b.Ran {
		if strings.HasPrefix(id, prefix) {
			return id
		}
	}
	return ""
}

// RanOn is the node a finished batch bundle's job ran on as assignment id
// (Bundle.Ran): where to read the output its worker keeps a while.
func (s *State) RanOn(id string) (node string, ok bool) {
	bundle, _, _ := strings.Cut(id, ":") // bundle ids hold no ':' (namePattern)
	b := s.Bundle(bundle)
	if b == nil || !slices.Contains(b.Ran, id) {
		return "", false
	}
	return id[strings.LastIndexByte(id, '@')+1:], true
}
