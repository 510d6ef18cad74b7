package fsm

import (
	"fmt"
	"slices"

	"github.com/amserver/amserver/internal/plant"
	"github.com/amserver/amserver/ledger"
)

// PlanResult says which plan parts committed and why the others did not.
type PlanResult struct {
	Committed []int
	Rejected  []PartRejection
}

// PartRejection explains one rejected plan part.
type PartRejection struct {
	Part     int
	BundleID string
	Reason   string
	// Exhausted is set when the part no longer fit the ledger (a conflict
	// with a newer state), as opposed to a malformed or stale part.
	Exhausted bool
	// Check names the re-check that failed: a ledger dimension or a rule
	// of the re-check lists (recheck.go); empty for other rejections.
	Check string
}

func (f *FSM) applyPlan(t *tx, p *Plan) (any, error) {
	t.advance(p.Now)
	t.eval, t.lost, t.recount = f.eval, p.Lost, p.DegradedRecount
	t.basis = t.index
	if p.Basis > 0 && p.Basis < t.index {
		t.basis = p.Basis
	}
	res := &PlanResult{}
	pl := newPlanLedger(t)
	for i := range p.Parts {
		bundleID, err := t.applyPart(pl, &p.Parts[i])
		if err != nil {
			res.Rejected = append(res.Rejected, rejection(i, bundleID, err))
			continue
		}
		res.Committed = append(res.Committed, i)
	}
	pl.flush()
	for _, w := range p.DrainWaits {
		t.event("drainWaits", w.Bundle, w.Node, "node %s is draining, but bundle %s has nowhere to go: %s; it moves when room appears",
			w.Node, w.Bundle, w.Why)
	}
	return res, nil
}

// staged is a bundle update checked against the ledger but not yet written.
type staged struct {
	update   *BundleUpdate
	old      *Bundle
	next     *Bundle
	stopped  []string // assignment ids to stop
	released []string // nodes that gave up a reservation
}

// applyPart re-checks one part against the plan's ledger through an
// overlay of its own; only if every update fits does anything reach the
// plan's ledger and the transaction.
func (t *tx) applyPart(pl *planLedger, part *PlanPart) (string, error) {
	overlay := ledger.NewOverlay(pl)
	seen := map[string]bool{}
	var stages []*staged
	for i := range part.Updates {
		u := &part.Updates[i]
		if seen[u.BundleID] {
			return u.BundleID, fmt.Errorf("%w: bundle %s updated twice in one part", ErrInvalid, u.BundleID)
		}
		seen[u.BundleID] = true
		st, err := t.stage(overlay, u)
		if err != nil {
			return u.BundleID, err
		}
		if err := t.stillLost(st.released); err != nil {
			return u.BundleID, err
		}
		stages = append(stages, st)
	}
	svc, err := t.stageServices(overlay, part.Services)
	if err != nil {
		return "", err
	}
	overlay.Commit()
	for _, st := range stages {
		t.commitStage(st)
	}
	if len(svc) > 0 {
		// Withdrawing a service's capabilities reads and releases through
		// the state itself, so the plan's ledger must be there first.
		pl.flush()
		t.commitServices(svc)
	}
	for _, st := range stages {
		t.drainedEvents(pl, st.released)
	}
	return "", nil
}

// stillLost refuses releases on a node the plan treats as lost (Plan.Lost)
// that is no longer down or left.
func (t *tx) stillLost(released []string) error {
	for _, id := range released {
		if !slices.Contains(t.lost, id) {
			continue
		}
		if n := t.State.Node(id); n != nil && n.Status != NodeDown && n.Status != NodeLeft {
			return fmt.Errorf("%w: node %s is %s again; the failover planned on it as lost", ErrConflict, id, n.Status)
		}
	}
	return nil
}

// drainedEvents announces draining nodes that this part left empty; usage
// is read through the plan's ledger, which holds the part's releases.
func (t *tx) drainedEvents(pl *planLedger, nodes []string) {
	for _, id := range nodes {
		n := t.State.Node(id)
		if n == nil || !n.Draining || t.announced(id) {
			continue
		}
		if _, used, _ := pl.Node(id); used.Reservations == 0 {
			t.event("nodeDrained", "", id, "node %s is drained: nothing is placed on it", id)
		}
	}
}

// announced reports whether this transaction already emitted nodeDrained.
func (t *tx) announced(node string) bool {
	for _, e := range t.events {
		if e.Type == "nodeDrained" && e.NodeID == node {
			return true
		}
	}
	return false
}

// stage applies one update to a copy of its bundle and to the overlay.
func (t *tx) stage(overlay *ledger.Overlay, u *BundleUpdate) (*staged, error) {
	old := t.Bundle(u.BundleID)
	if old == nil {
		return nil, fmt.Errorf("bundle %s: %w", u.BundleID, ErrNotFound)
	}
	if old.Deleting && (len(u.Place) > 0 || u.Promote) {
		return nil, fmt.Errorf("%w: bundle %s is being deleted", ErrConflict, u.BundleID)
	}
	st := &staged{update: u, old: old, next: cloneBundle(old)}
	b := st.next
	if u.Promote {
		if len(b.Replicas) < 2 || b.Spec.IsService() {
			return nil, fmt.Errorf("%w: bundle %s has no backup to promote", ErrInvalid, b.ID())
		}
		b.Replicas[0], b.Replicas[1] = b.Replicas[1], b.Replicas[0]
		b.Epoch++
	}
	for _, r := range u.Release {
		job := b.slotJob(r.Slot, r.Job)
		if job == nil || !job.Placed() {
			return nil, fmt.Errorf("%w: bundle %s slot %d job %s is not placed", ErrConflict, b.ID(), r.Slot, r.Job)
		}
		k := ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: r.Job}
		ledger.Release(overlay, k)
		st.stopped = append(st.stopped, assignmentID(k, job.NodeID))
		st.released = append(st.released, job.NodeID)
		*job = JobPlacement{Name: job.Name, Attempts: job.Attempts} // a batch job's restarts count across moves
	}
	for _, p := range u.Place {
		if err := t.stagePlace(overlay, b, p); err != nil {
			return nil, err
		}
	}
	if u.SetDegradations {
		b.Degradations = mergeDegradations(old.Degradations, u.Degradations, t.now)
	}
	b.Explain = u.Explain
	if u.Explain != nil {
		b.AttemptIndex = t.index
		if t.basis > 0 {
			b.AttemptIndex = t.basis
		}
	}
	if err := t.recheckReplicas(b, u); err != nil {
		return nil, err
	}
	return st, nil
}

func (t *tx) stagePlace(overlay *ledger.Overlay, b *Bundle, p Place) error {
	job := b.slotJob(p.Slot, p.Job)
	if job == nil {
		return fmt.Errorf("%w: bundle %s has no job %s in slot %d", ErrInvalid, b.ID(), p.Job, p.Slot)
	}
	if job.Placed() {
		return fmt.Errorf("%w: bundle %s slot %d job %s is already placed", ErrConflict, b.ID(), p.Slot, p.Job)
	}
	n := t.State.Node(p.Node)
	if n == nil || !n.Placeable() {
		return fmt.Errorf("%w: node %s is not placeable", ErrConflict, p.Node)
	}
	if want := b.Spec.SlotPool(p.Slot); n.Pool != want {
		return fmt.Errorf("%w: node %s is in pool %s, not %s", ErrConflict, p.Node, n.Pool, want)
	}
	if err := t.recheckPlace(b, p, n); err != nil {
		return err
	}
	k := ledger.Key{Bundle: b.ID(), Replica: p.Slot, Job: p.Job}
	r := ledger.Reservation{Key: k, Node: n.ID, Pool: n.Pool, Grant: p.Grant}
	if plant.Active(plant.SkipRecheck) {
		reserveUnchecked(overlay, r)
	} else if err := ledger.Reserve(overlay, r); err != nil {
		return fmt.Errorf("bundle %s job %s on node %s: %w", b.ID(), p.Job, n.ID, err)
	}
	*job = JobPlacement{Name: p.Job, NodeID: n.ID, Grant: p.Grant, Status: JobAssigned, Attempts: job.Attempts}
	return nil
}

// mergeDegradations keeps the original since-time of codes that persist.
func mergeDegradations(old, next []Degradation, now int64) []Degradation {
	out := make([]Degradation, 0, len(next))
	for _, d := range next {
		d.Since = now
		for _, o := range old {
			if o.Code == d.Code {
				d.Since = o.Since
			}
		}
		out = append(out, d)
	}
	return out
}

// commitStage writes a staged bundle, its assignments and its events.
func (t *tx) commitStage(st *staged) {
	b, u := st.next, st.update
	for _, id := range st.stopped {
		t.stopAssignment(id)
	}
	for _, p := range u.Place {
		t.startAssignment(b, p)
	}
	if u.Promote {
		t.refreshRoles(b)
	}
	t.putBundle(b)
	t.planEvents(st)
}

func (t *tx) startAssignment(b *Bundle, p Place) {
	k := ledger.Key{Bundle: b.ID(), Replica: p.Slot, Job: p.Job}
	a := &Assignment{
		ID: assignmentID(k, p.Node), BundleID: b.ID(), Replica: p.Slot, Job: p.Job, NodeID: p.Node,
		Role: roleOfSlot(b, p.Slot), Epoch: b.Epoch, Desired: DesiredRun, Status: JobAssigned,
		Grant: p.Grant, CreateIndex: t.index, Generation: b.Generation, RunOnce: b.Spec.IsBatch(),
	}
	if spec := b.Spec.Job(p.Job); spec != nil {
		a.Launch = &spec.Launch // shared with the bundle row (Assignment.Launch)
		a.Runtime = LaunchRuntime(&spec.Launch, t.TemplateRuntime)
		a.MemoryLimitMiB = spec.Requirements.MemoryLimitMiB
	}
	if old := t.Assignment(a.ID); old != nil {
		a.CreateIndex = old.CreateIndex
	}
	t.putAssignment(a)
}

func roleOfSlot(b *Bundle, slot int) string {
	switch {
	case b.Spec.IsService():
		return RoleReplica
	case len(b.Replicas) > 0 && b.Replicas[0].Slot == slot:
		return RolePrimary
	}
	return RoleBackup
}

// refreshRoles rewrites role and epoch on a bundle's running assignments
// after a promotion, so workers can fence the deposed primary.
func (t *tx) refreshRoles(b *Bundle) {
	for _, a := range t.BundleAssignments(b.ID()) {
		if a.Desired != DesiredRun {
			continue
		}
		cp := *a
		cp.Role, cp.Epoch = roleOfSlot(b, a.Replica), b.Epoch
		t.putAssignment(&cp)
	}
}

func (t *tx) planEvents(st *staged) {
	b, u, old := st.next, st.update, st.old
	id := b.ID()
	switch {
	case u.Preemptor != "":
		t.event("evicted", id, "", "bundle %s evicted by %s", id, u.Preemptor)
	case len(u.Release) > 0 && len(u.Place) > 0:
		t.event("bundlePlaced", id, "", "bundle %s moved: %s", id, orDefault(u.Reason, "re-placed"))
	}
	if u.Promote {
		t.event("failover", id, "", "bundle %s: backup promoted to primary, epoch %d: %s", id, b.Epoch, orDefault(u.Reason, "failover"))
	}
	for _, d := range b.Degradations {
		if !old.HasDegradation(d.Code) || (t.recount && d.Code == DegradeReplicasMissing && completeReplicas(old) != completeReplicas(b)) {
			t.event("degraded", id, "", "bundle %s degraded: %s: %s", id, d.Code, d.Message)
		}
	}
	for _, d := range old.Degradations {
		if !b.HasDegradation(d.Code) {
			t.event("healed", id, "", "bundle %s healed: %s", id, d.Code)
		}
	}
	if b.State != old.State {
		switch b.State {
		case StatePlaced, StateDegraded:
			if old.State != StatePlaced && old.State != StateDegraded {
				t.event("bundlePlaced", id, "", "bundle %s placed", id)
			}
		case StateUnplaceable:
			t.event("bundleUnplaceable", id, "", "bundle %s cannot be placed now", id)
		}
	}
}

// completeReplicas counts a bundle's replicas whose every job holds a node.
func completeReplicas(b *Bundle) int {
	n := 0
	for i := range b.Replicas {
		if b.Replicas[i].Complete() {
			n++
		}
	}
	return n
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// reserveUnchecked is the planted SkipRecheck bug: it books a grant without
// asking whether it still fits.
func reserveUnchecked(s ledger.Store, r ledger.Reservation) { ledger.BookUnchecked(s, r) }
