package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/amserver/amserver/ledger"
)

func (f *FSM) validated(t *tx, spec *BundleSpec) error {
	Normalize(spec)
	if findings := validate(spec, &t.State, f.exprs, false); !findings.Valid() {
		return &ValidationError{Findings: findings}
	}
	return nil
}

func (f *FSM) applyCreateBundle(t *tx, req *CreateBundleRequest) (any, error) {
	t.advance(req.Now)
	spec := req.Spec
	if err := f.validated(t, &spec); err != nil {
		return nil, err
	}
	old := t.Bundle(spec.ID)
	if old != nil {
		t.ResolveRefs(&spec, &old.Spec)
	} else {
		t.ResolveRefs(&spec, nil)
	}
	if old != nil {
		switch {
		case old.Deleting: // whatever the spec, the id is free only once the bundle is gone
			return nil, fmt.Errorf("%w: bundle %s is being deleted; submit it again once it is gone", ErrConflict, spec.ID)
		case specEqual(&old.Spec, &spec):
			return created{bundle: old}, nil
		}
		return nil, fmt.Errorf("bundle %s: %w with a different spec", spec.ID, ErrExists)
	}
	b := newBundle(spec, t.index, t.now)
	t.putBundle(b)
	t.event("bundleCreated", b.ID(), "", "bundle %s created in pool %s", b.ID(), spec.Pool)
	return created{bundle: b, isNew: true}, nil
}

func (f *FSM) applyReplaceBundle(t *tx, req *ReplaceBundleRequest) (any, error) {
	t.advance(req.Now)
	t.relaunchUnavailable, t.settleRollout = req.RelaunchUnavailable, req.SettleRollout
	spec := req.Spec
	old := t.Bundle(spec.ID)
	if old == nil {
		return nil, fmt.Errorf("bundle %s: %w", spec.ID, ErrNotFound)
	}
	if req.CAS != 0 && req.CAS != old.ModifyIndex {
		return nil, fmt.Errorf("bundle %s: %w: expected %d, is %d", spec.ID, ErrCASMismatch, req.CAS, old.ModifyIndex)
	}
	if old.Deleting {
		return nil, fmt.Errorf("%w: bundle %s is being deleted", ErrConflict, spec.ID)
	}
	if err := f.validated(t, &spec); err != nil {
		return nil, err
	}
	t.ResolveRefs(&spec, nil) // a replace takes the latest version of a bare name
	b := cloneBundle(old)
	switch {
	case placementChanged(&old.Spec, &spec, t.TemplateRuntime) || b.Outcome != "":
		// A finished batch bundle submitted again runs again, from scratch.
		t.releaseAll(old)
		b.Replicas = freshReplicas(&spec)
		b.Degradations, b.Explain = nil, nil
		b.Outcome, b.FinishTime, b.Rolling, b.Ran, b.Settling = "", 0, false, nil, nil
		b.Epoch++
	default:
		if spec.IsService() && spec.Count != old.Spec.Count {
			t.scaleService(b, &spec)
		}
		if launchChanged(&old.Spec, &spec) {
			t.relaunch(b, &spec)
		} else if b.Rolling && req.Rollout {
			b.Spec = spec
			t.advanceRollout(b)
		}
	}
	b.Spec = spec
	t.putBundle(b)
	return created{bundle: b}, nil
}

// relaunch is an in-place launch change (DESIGN §4): every reservation and
// node stays and the bundle's generation moves. Each running assignment
// takes the new launch with the new generation, which tells its worker to
// stop the job and start it again with it: all at once, or for a service
// maxUnavailable replicas at a time (advanceRollout).
func (t *tx) relaunch(b *Bundle, spec *BundleSpec) {
	b.Generation++
	b.Spec = *spec
	if spec.IsService() {
		t.advanceRollout(b)
	} else {
		for _, a := range t.BundleAssignments(b.ID()) {
			if a.Desired == DesiredRun {
				t.relaunchAssignment(b, a)
			}
		}
	}
	t.event("bundleUpdated", b.ID(), "", "bundle %s: launch changed in place, generation %d", b.ID(), b.Generation)
}

// launchChanged reports whether some job's launch differs.
func launchChanged(a, b *BundleSpec) bool {
	for i := range a.Jobs {
		if i < len(b.Jobs) && !reflect.DeepEqual(a.Jobs[i].Launch, b.Jobs[i].Launch) {
			return true
		}
	}
	return false
}

// scaleService adds or removes a service's replicas (DESIGN §2.3): new ones
// are appended unplaced at the next slots, and a scale-down removes the
// highest-index replicas, releasing what they hold and stopping their
// assignments. The other replicas keep their reservations and the epoch.
// The explanation of an earlier attempt is dropped so the placer looks at
// the bundle again at once.
func (t *tx) scaleService(b *Bundle, spec *BundleSpec) {
	for len(b.Replicas) < spec.Count {
		b.Replicas = append(b.Replicas, freshReplica(spec, len(b.Replicas)))
	}
	for _, r := range b.Replicas[min(spec.Count, len(b.Replicas)):] {
		for _, j := range r.Jobs {
			if !j.Placed() {
				continue
			}
			k := ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: j.Name}
			ledger.Release(t.ledgerStore(), k)
			t.stopAssignment(assignmentID(k, j.NodeID))
		}
	}
	b.Replicas = b.Replicas[:min(spec.Count, len(b.Replicas))]
	b.dropSettling(func(slot int) bool { return b.replicaBySlot(slot) == nil })
	b.Explain, b.AttemptIndex = nil, 0
	t.event("bundleScaled", b.ID(), "", "bundle %s scaled to %d replicas", b.ID(), spec.Count)
}

// specEqual compares specs by their JSON form, in which nil and empty maps and
// slices are alike, so an identical retry is recognised whatever path decoded it.
func specEqual(a, b *BundleSpec) bool { return sameJSON(a, b) }

// sameJSON compares two values by their JSON form, in which a nil and an
// empty list or map (one decoded from the log, the other from a snapshot)
// are alike.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// placementChanged reports whether a new spec invalidates the current
// placement; tags, priorities (the bundle's or a job's) and timers do not.
// A launch change alone is made in place (relaunch), unless it changes the
// runtime a job needs, which is a placement rule.
func placementChanged(a, b *BundleSpec, rt templateRuntimes) bool {
	return a.Pool != b.Pool || !jobsPlaceAlike(a.Jobs, b.Jobs, rt) ||
		a.Placement != b.Placement || !reflect.DeepEqual(a.Resilience, b.Resilience) ||
		a.Kind != b.Kind || a.MaxPerNode != b.MaxPerNode || a.MaxPerAz != b.MaxPerAz
}

// jobsPlaceAlike: the same jobs with the same requirements and rules, and
// launches that need the same runtimes.
func jobsPlaceAlike(a, b []Job, rt templateRuntimes) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if JobRuntimeNeed(&x, rt) != JobRuntimeNeed(&y, rt) {
			return false
		}
		// A job's own band orders the queue but does not move a placed job.
		x.Launch, y.Launch = Launch{}, Launch{}
		x.Priority, y.Priority = "", ""
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// releaseAll gives back every reservation of a bundle and stops its running
// assignments.
func (t *tx) releaseAll(b *Bundle) {
	for _, k := range b.Held() {
		ledger.Release(t.ledgerStore(), k)
	}
	for _, a := range t.BundleAssignments(b.ID()) {
		t.stopAssignment(a.ID)
	}
}

func (f *FSM) applyDeleteBundle(t *tx, req *DeleteBundleRequest) (any, error) {
	t.advance(req.Now)
	b := t.Bundle(req.ID)
	if b == nil {
		return nil, fmt.Errorf("bundle %s: %w", req.ID, ErrNotFound)
	}
	t.startDeletion(b)
	return nil, nil
}

// startDeletion begins the stop-then-delete saga; it is idempotent.
func (t *tx) startDeletion(b *Bundle) {
	if b.Deleting {
		return
	}
	cp := cloneBundle(b)
	cp.Deleting, cp.DeleteTime = true, t.now
	for i := range cp.Replicas {
		for j := range cp.Replicas[i].Jobs {
			if job := &cp.Replicas[i].Jobs[j]; job.Placed() && job.Status != JobStopped {
				job.Status = JobStopping
			}
		}
	}
	for _, a := range t.BundleAssignments(b.ID()) {
		t.stopAssignment(a.ID)
	}
	t.putBundle(cp)
}

func (f *FSM) applyPurgeBundle(t *tx, req *PurgeBundleRequest) (any, error) {
	t.advance(req.Now)
	b := t.Bundle(req.ID)
	if b == nil {
		return nil, fmt.Errorf("bundle %s: %w", req.ID, ErrNotFound)
	}
	if !b.Deleting {
		return nil, fmt.Errorf("%w: bundle %s is not being deleted", ErrConflict, req.ID)
	}
	for _, k := range b.Held() {
		ledger.Release(t.ledgerStore(), k)
	}
	for _, a := range t.BundleAssignments(b.ID()) {
		t.delete(tableAssignments, a)
	}
	t.delete(tableBundles, b)
	reason := req.Reason
	if reason == "" {
		reason = "every job stopped"
	}
	t.event("bundleDeleted", b.ID(), "", "bundle %s deleted: %s", b.ID(), reason)
	return nil, nil
}

// applyTimer fires due timers: a bundle's effective start and stop, which
// its jobs' template launch times move (EffectiveStart, EffectiveStop). The
// leader names the bundles it believes are due; the FSM checks each against
// the command's clock, so a stale or early command changes nothing.
func (f *FSM) applyTimer(t *tx, req *TimerRequest) (any, error) {
	t.advance(req.Now)
	for _, id := range req.Start {
		if b := t.Bundle(id); b != nil && b.State == StateScheduled && b.Spec.EffectiveStart() <= t.now {
			t.putBundle(cloneBundle(b))
		}
	}
	for _, id := range req.Stop {
		if b := t.Bundle(id); b != nil {
			if stop := b.Spec.EffectiveStop(); stop != 0 && stop <= t.now {
				t.startDeletion(b)
			}
		}
	}
	return nil, nil
}
