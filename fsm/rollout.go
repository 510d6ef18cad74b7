package fsm

import "slices"

// A launch change on a service is rolled out replica by replica (DESIGN
// §4): at most maxUnavailable replicas are unavailable at a time, a replica
// being available when it is complete and every job of it reports running.
// The FSM moves the rollout on as reports arrive, so it needs no timer and
// a new leader has nothing to rebuild: relaunch starts it, and every
// report of a replica that finished its restart lets the next ones go.
// Under SettleRollout a relaunched replica must also have run for the
// leader's settle window before it counts (rollout_settle.go).

// relaunchAssignment hands one assignment the spec's launch at the
// bundle's generation; its status starts over, so the worker's next report
// (of the restarted job) is a change.
func (t *tx) relaunchAssignment(b *Bundle, a *Assignment) {
	job := b.Spec.Job(a.Job)
	if job == nil {
		return
	}
	t.relaunchWith(a, &job.Launch, LaunchRuntime(&job.Launch, t.TemplateRuntime), b.Generation)
	if jp := b.slotJob(a.Replica, a.Job); jp != nil && jp.NodeID == a.NodeID {
		jp.Status, jp.Message = JobAssigned, ""
	}
}

// relaunchWith writes a with launch l (run with runtime) at generation
// gen, which tells its worker to restart it with l; its status starts over,
// so the worker's next report (of the restarted job) is a change. l points
// into the row it comes from (Assignment.Launch).
func (t *tx) relaunchWith(a *Assignment, l *Launch, runtime string, gen uint64) {
	cp := *a
	cp.Launch, cp.Runtime = l, runtime
	cp.Generation = gen
	cp.Status, cp.Message, cp.ExitCode = JobAssigned, "", 0
	t.putAssignment(&cp)
}

// advanceRollout relaunches the replicas still on an older generation, in
// index order, as far as maxUnavailable allows; b is the bundle being
// written (a copy the caller puts). A replica still settling
// (Bundle.Settling) counts unavailable, as one not running does. With
// t.relaunchUnavailable a replica behind that is not available anyway (a
// version that crashes, the one before a fix) is relaunched first and at
// once: it costs no availability, and waiting for it to run, which only
// the new launch may bring about, stalled the rollout for good.
func (t *tx) advanceRollout(b *Bundle) {
	behind := map[int][]*Assignment{} // slot → its assignments on an older generation
	for _, a := range t.BundleAssignments(b.ID()) {
		if a.Desired == DesiredRun && a.Generation < b.Generation {
			behind[a.Replica] = append(behind[a.Replica], a)
		}
	}
	b.dropSettling(func(slot int) bool { return b.replicaBySlot(slot) == nil }) // scaled away
	b.Rolling = len(behind) > 0 || len(b.Settling) > 0
	if len(behind) == 0 {
		return
	}
	budget := max(b.Spec.MaxUnavailable, 1)
	for i := range b.Replicas {
		r := &b.Replicas[i]
		if replicaAvailable(r) && !slices.Contains(b.Settling, r.Slot) {
			continue
		}
		budget--
		if t.relaunchUnavailable {
			t.relaunchReplica(b, behind[r.Slot])
			delete(behind, r.Slot)
		}
	}
	for i := range b.Replicas {
		slot := b.Replicas[i].Slot
		if budget <= 0 {
			return
		}
		if len(behind[slot]) == 0 {
			continue
		}
		t.relaunchReplica(b, behind[slot])
		budget--
	}
}

// relaunchReplica relaunches one replica's assignments on an older
// generation; under settleRollout the replica settles first
// (rollout_settle.go).
func (t *tx) relaunchReplica(b *Bundle, as []*Assignment) {
	for _, a := range as {
		t.relaunchAssignment(b, a)
	}
	if len(as) > 0 && t.settleRollout && !slices.Contains(b.Settling, as[0].Replica) {
		b.Settling = append(b.Settling, as[0].Replica)
		slices.Sort(b.Settling)
	}
}

// replicaAvailable: complete, and every job reports running (the rollout
// also waits for a settling replica's window: advanceRollout).
func replicaAvailable(r *Replica) bool {
	if !r.Complete() {
		return false
	}
	for _, j := range r.Jobs {
		if j.Status != JobRunning {
			return false
		}
	}
	return true
}
