package fsm

import (
	"fmt"
	"maps"

	"github.com/amserver/amserver/ledger"
)

var validReport = map[string]bool{JobRunning: true, JobStopped: true, JobFailed: true, JobExited: true}

func (f *FSM) applyAssignmentStatus(t *tx, req *AssignmentStatusRequest) (any, error) {
	t.advance(req.Now)
	t.relaunchUnavailable, t.settleRollout = req.RelaunchUnavailable, req.SettleRollout
	if !validReport[req.Status] {
		return nil, fmt.Errorf("%w: assignment status %q (want running, stopped, failed or exited)", ErrInvalid, req.Status)
	}
	a := t.Assignment(req.AssignmentID)
	if a == nil {
		return nil, fmt.Errorf("assignment %s: %w", req.AssignmentID, ErrNotFound)
	}
	if a.NodeID != req.NodeID {
		return nil, fmt.Errorf("%w: assignment %s belongs to node %s, not %s", ErrConflict, a.ID, a.NodeID, req.NodeID)
	}
	var code int32
	if req.Status == JobExited {
		if req.Generation < a.Generation {
			return nil, nil // the exit of a run the assignment has moved past (a restart)
		}
		code = exitCode32(req.ExitCode)
	}
	if a.Status == req.Status && a.Message == req.Message && a.ExitCode == code {
		return nil, nil
	}
	done := a.Desired == DesiredStop && req.Status != JobRunning
	if done {
		t.delete(tableAssignments, a)
	} else {
		cp := *a
		cp.Status, cp.Message, cp.ExitCode = req.Status, req.Message, code
		t.putAssignment(&cp)
	}
	if a.ServiceID != "" {
		t.serviceReport(a, req.Status)
		return nil, nil
	}
	if req.Status == JobExited && t.jobExit(a, code, req.Message) {
		return nil, nil
	}
	t.jobReport(a, req.Status, req.Message)
	return nil, nil
}

// jobReport mirrors a report into the bundle's job status when the
// assignment is the job's current placement, and its message with it. A
// report that changes only the message changes nothing: servers from
// before the message was mirrored write the same rows then, and during a
// rolling upgrade the two differ in the message alone, which the digest
// leaves out (digest.go).
func (t *tx) jobReport(a *Assignment, status, message string) {
	b := t.Bundle(a.BundleID)
	if b == nil {
		return
	}
	job := b.slotJob(a.Replica, a.Job)
	if job == nil || job.NodeID != a.NodeID || job.Status == status {
		return
	}
	cp := cloneBundle(b)
	job = cp.slotJob(a.Replica, a.Job)
	job.Status, job.Message = status, message
	if status == JobRunning && cp.Rolling {
		t.advanceRollout(cp) // a replica runs (again): the next may go
	}
	t.putBundle(cp)
}

// serviceReport adds a service's provided capabilities to its node while it
// runs, and withdraws them when it stops or fails (DESIGN §2.5).
func (t *tx) serviceReport(a *Assignment, status string) {
	if status != JobRunning {
		// A lazy service stopped on purpose (its last consumer left) keeps
		// its offer; one that failed loses it, as an eager one does.
		if svc := t.Service(a.ServiceID); svc != nil && svc.Lifecycle == LifecycleLazy && a.Desired != DesiredRun && status == JobStopped {
			return
		}
		t.withdrawProvided(a.NodeID, a.ServiceID)
		return
	}
	svc := t.Service(a.ServiceID)
	if svc == nil || len(svc.Provides) == 0 || a.Desired != DesiredRun {
		return
	}
	t.offerProvided(a.NodeID, svc)
}

func capabilityEqual(a, b ledger.Capability) bool {
	return a.Name == b.Name && a.Count == b.Count && maps.Equal(a.Attributes, b.Attributes)
}

func (f *FSM) applyUpsertService(t *tx, req *UpsertServiceRequest) (any, error) {
	s := req.Service
	NormalizeService(&s)
	if err := ValidateService(&s); err != nil {
		return nil, err
	}
	if err := CheckServiceConstraints(&s, f.exprs); err != nil {
		return nil, err
	}
	s.CreateIndex = t.index
	old := t.Service(s.ID)
	if old != nil {
		s.CreateIndex = old.CreateIndex
	}
	s.ModifyIndex = t.index
	t.insert(tableServices, &s)
	if req.Update && old != nil {
		t.applyServiceUpdate(old, t.Service(s.ID))
	}
	return nil, nil
}

func (f *FSM) applyDeleteService(t *tx, req *DeleteServiceRequest) (any, error) {
	s := t.Service(req.ID)
	if s == nil {
		return nil, fmt.Errorf("node service %s: %w", req.ID, ErrNotFound)
	}
	for _, a := range t.ServiceAssignments(s.ID) {
		ledger.Release(t.ledgerStore(), ServiceKey(s.ID, a.NodeID))
		t.stopAssignment(a.ID)
		t.withdrawProvided(a.NodeID, s.ID)
	}
	t.withdrawServiceEverywhere(s)
	t.delete(tableServices, s)
	return nil, nil
}

// ServiceKey is the ledger key of a node service's reservation on a node;
// "~" cannot appear in bundle ids, so it never collides with a bundle's.
func ServiceKey(serviceID, node string) ledger.Key {
	return ledger.Key{Bundle: "~svc~" + serviceID, Job: node}
}

func serviceAssignmentID(serviceID, node string) string {
	return "svc:" + serviceID + "@" + node
}

// stageServices checks node-service placements and stops against the overlay.
func (t *tx) stageServices(overlay *ledger.Overlay, list []ServicePlacement) ([]ServicePlacement, error) {
	for _, sp := range list {
		svc := t.Service(sp.ServiceID)
		if svc == nil {
			return nil, fmt.Errorf("node service %s: %w", sp.ServiceID, ErrNotFound)
		}
		k := ServiceKey(svc.ID, sp.Node)
		if sp.Stop {
			ledger.Release(overlay, k)
			continue
		}
		if err := t.serviceFits(svc, sp.Node); err != nil {
			return nil, err
		}
		if err := checkServiceGrant(svc, sp); err != nil {
			return nil, err
		}
		n := t.State.Node(sp.Node)
		r := ledger.Reservation{Key: k, Node: n.ID, Pool: n.Pool, Grant: sp.Grant}
		if err := ledger.Reserve(overlay, r); err != nil {
			return nil, fmt.Errorf("service %s on node %s: %w", svc.ID, n.ID, err)
		}
	}
	return list, nil
}

func (t *tx) commitServices(list []ServicePlacement) {
	for _, sp := range list {
		id := serviceAssignmentID(sp.ServiceID, sp.Node)
		if sp.Stop {
			t.stopInstance(sp.ServiceID, sp.Node)
			continue
		}
		svc := t.Service(sp.ServiceID)
		a := &Assignment{
			ID: id, ServiceID: svc.ID, NodeID: sp.Node, Job: svc.ID, Role: RolePrimary,
			Desired: DesiredRun, Status: JobAssigned, Grant: sp.Grant, Launch: &svc.Launch, CreateIndex: t.index,
			Runtime: LaunchRuntime(&svc.Launch, nil),
		}
		t.putAssignment(a)
	}
}

// stopInstance stops a service's instance on node (its reservation is the
// caller's to release) and withdraws what an eager one provided there; a
// lazy service's offer stays (the leader withdraws it).
func (t *tx) stopInstance(serviceID, node string) {
	t.stopAssignment(serviceAssignmentID(serviceID, node))
	if svc := t.Service(serviceID); svc == nil || svc.Lifecycle != LifecycleLazy {
		t.withdrawProvided(node, serviceID)
	}
}
