package fsm

import (
	"slices"
	"sort"
	"strconv"

	"github.com/amserver/amserver/ledger"
)

// newBundle builds a bundle's status skeleton: one replica per slot, every
// job unplaced.
func newBundle(spec BundleSpec, index uint64, now int64) *Bundle {
	b := &Bundle{Spec: spec, Epoch: 1, SubmitTime: now, CreateIndex: index}
	b.Replicas = freshReplicas(&spec)
	return b
}

func freshReplicas(spec *BundleSpec) []Replica {
	out := make([]Replica, spec.Replicas())
	for i := range out {
		out[i] = freshReplica(spec, i)
	}
	return out
}

func freshReplica(spec *BundleSpec, slot int) Replica {
	jobs := make([]JobPlacement, len(spec.Jobs))
	for j := range spec.Jobs {
		jobs[j] = JobPlacement{Name: spec.Jobs[j].Name}
	}
	return Replica{Slot: slot, Role: spec.RoleAt(slot), Jobs: jobs}
}

// RoleAt is the role of the replica at a position of Bundle.Replicas: a
// service's replicas are peers; otherwise index 0 is the primary.
func (s *BundleSpec) RoleAt(i int) string {
	switch {
	case s.IsService():
		return RoleReplica
	case i == 0:
		return RolePrimary
	}
	return RoleBackup
}

// cloneBundle copies everything Apply may modify, so readers holding the old
// pointer keep seeing the old state.
func cloneBundle(b *Bundle) *Bundle {
	cp := *b
	cp.Replicas = make([]Replica, len(b.Replicas))
	for i, r := range b.Replicas {
		r.Jobs = append([]JobPlacement(nil), r.Jobs...)
		cp.Replicas[i] = r
	}
	cp.Degradations = append([]Degradation(nil), b.Degradations...)
	cp.Settling = slices.Clone(b.Settling)
	return &cp
}

// replicaBySlot returns the replica with the given ledger slot.
func (b *Bundle) replicaBySlot(slot int) *Replica {
	// A service's replicas never swap, so its slot is its position: the
	// fast path keeps placing 10,000 replicas linear.
	if slot >= 0 && slot < len(b.Replicas) && b.Replicas[slot].Slot == slot {
		return &b.Replicas[slot]
	}
	for i := range b.Replicas {
		if b.Replicas[i].Slot == slot {
			return &b.Replicas[i]
		}
	}
	return nil
}

func (b *Bundle) slotJob(slot int, job string) *JobPlacement {
	r := b.replicaBySlot(slot)
	if r == nil {
		return nil
	}
	for i := range r.Jobs {
		if r.Jobs[i].Name == job {
			return &r.Jobs[i]
		}
	}
	return nil
}

// SlotPool is the pool a replica slot places into: the backup slot may use
// resilience.pool.
func (s *BundleSpec) SlotPool(slot int) string {
	if slot > 0 && s.Resilience != nil && s.Resilience.Pool != "" {
		return s.Resilience.Pool
	}
	return s.Pool
}

// Held lists the ledger keys of every placed job.
func (b *Bundle) Held() []ledger.Key {
	var out []ledger.Key
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Placed() {
				out = append(out, ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: j.Name})
			}
		}
	}
	return out
}

// HasDegradation reports whether the bundle carries the code.
func (b *Bundle) HasDegradation(code string) bool {
	for _, d := range b.Degradations {
		if d.Code == code {
			return true
		}
	}
	return false
}

// deriveState computes a bundle's state from its placement (DESIGN §4), so
// no command can leave state and placement disagreeing.
func deriveState(b *Bundle, now int64) string {
	switch {
	case b.Deleting:
		return StateDeleting
	case b.Outcome != "":
		return b.Outcome
	case len(b.Replicas) == 0:
		return StatePending
	case b.Spec.IsService():
		return serviceState(b, now)
	}
	primary := &b.Replicas[0]
	if !primary.Complete() {
		if len(b.Held()) == 0 && b.Spec.EffectiveStart() > now {
			return StateScheduled
		}
		if b.Explain != nil {
			return StateUnplaceable
		}
		return StatePending
	}
	if len(b.Degradations) > 0 {
		return StateDegraded
	}
	for i := 1; i < len(b.Replicas); i++ {
		if !b.Replicas[i].Complete() {
			return StateDegraded
		}
	}
	return StatePlaced
}

// serviceState: placed when every replica is complete (degraded with a
// relaxed soft rule), degraded when some are, else as an unplaced primary.
func serviceState(b *Bundle, now int64) string {
	complete := 0
	for i := range b.Replicas {
		if b.Replicas[i].Complete() {
			complete++
		}
	}
	switch {
	case complete == len(b.Replicas) && len(b.Degradations) == 0:
		return StatePlaced
	case complete > 0:
		return StateDegraded
	case len(b.Held()) == 0 && b.Spec.EffectiveStart() > now:
		return StateScheduled
	case b.Explain != nil:
		return StateUnplaceable
	}
	return StatePending
}

// replicaState is a replica's own state for the API.
func replicaState(r *Replica) string {
	if r.Complete() {
		return StatePlaced
	}
	return StatePending
}

// AssignmentID is the id of the assignment of job of a bundle's replica
// slot on node: what the API shows as a placement's assignmentId.
func AssignmentID(bundle string, slot int, job, node string) string {
	return assignmentID(ledger.Key{Bundle: bundle, Replica: slot, Job: job}, node)
}

// assignmentID concatenates rather than formats: a list page of whole
// bundles builds one per job, and Sprintf cost three times the bytes.
func assignmentID(k ledger.Key, node string) string {
	return k.Bundle + ":" + strconv.Itoa(k.Replica) + ":" + k.Job + "@" + node
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// advance moves the transaction's clock to a command's leader time; the FSM
// never reads a clock of its own.
func (t *tx) advance(now int64) {
	if now > t.now {
		t.now = now
	}
}

// stopAssignment marks an assignment desired stopped; its worker stops it and
// reports, and the report removes it.
func (t *tx) stopAssignment(id string) {
	a := t.Assignment(id)
	if a == nil || a.Desired == DesiredStop {
		return
	}
	cp := *a
	cp.Desired = DesiredStop
	if cp.Status != JobStopped && cp.Status != JobFailed {
		cp.Status = JobStopping
	}
	t.putAssignment(&cp)
}
