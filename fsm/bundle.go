package fsm

import (
	"fmt"
	"sort"

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
		role := RolePrimary
		if i > 0 {
			role = RoleBackup
		}
		jobs := make([]JobPlacement, len(spec.Jobs))
		for j := range spec.Jobs {
			jobs[j] = JobPlacement{Name: spec.Jobs[j].Name}
		}
		out[i] = Replica{Slot: i, Role: role, Jobs: jobs}
	}
	return out
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
	return &cp
}

// replicaBySlot returns the replica with the given ledger slot.
func (b *Bundle) replicaBySlot(slot int) *Replica {
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
	case len(b.Replicas) == 0:
		return StatePending
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

func assignmentID(k ledger.Key, node string) string {
	return fmt.Sprintf("%s:%d:%s@%s", k.Bundle, k.Replica, k.Job, node)
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
