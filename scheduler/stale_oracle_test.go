package scheduler

import (
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// staleOracle decides which parts of a plan still fit a state, written apart
// from the FSM's re-check: a placement must pass the scheduler's own static
// feasibility stages for its job on a fresh snapshot of the state (pool and
// tier, placeable, taints, runtime, constraints), serve its job's request on the
// node as it is now (capability attributes, GPU models) and fit a ledger
// rebuilt from the state's reservations; a replica the part places into
// must keep its co-location groups, separations and hard same-AZ rule; and
// a backup sharing a forbidden domain with its primary must be recorded as
// the scheduler's degradations would say. Parts are judged in order, each
// committed one changing the ledger and bundles the next sees.
type staleOracle struct {
	st      *fsm.State
	sn      *Snapshot
	batch   *Batch
	led     *ledger.MemStore
	bundles map[string]*fsm.Bundle
}

func newStaleOracle(st *fsm.State) *staleOracle {
	sn := NewEngine(Options{}).Snapshot(st)
	o := &staleOracle{st: st, sn: sn, batch: sn.NewBatch(0), led: ledger.NewMemStore(), bundles: map[string]*fsm.Bundle{}}
	for _, n := range st.Nodes("") {
		o.led.AddNode(n.ID, n.Inventory())
	}
	for _, p := range st.Pools() {
		o.led.SetPoolCaps(p.Name, p.Caps)
		o.led.SetPoolGroup(p.Name, p.CapGroup)
	}
	for _, sc := range st.CapScopes() {
		o.led.SetPoolCaps(sc.Name, sc.Caps)
	}
	for _, r := range st.Reservations() {
		if err := ledger.Reserve(o.led, r); err != nil {
			panic("state breaks the ledger invariants: " + err.Error())
		}
	}
	return o
}

// judge returns the indexes of the parts that commit.
func (o *staleOracle) judge(plan *fsm.Plan) []int {
	var out []int
	for i, p := range plan.Parts {
		if o.part(p) {
			out = append(out, i)
		}
	}
	return out
}

func (o *staleOracle) bundle(id string) *fsm.Bundle {
	if b, ok := o.bundles[id]; ok {
		return b
	}
	return o.st.Bundle(id)
}

// part judges one part and, when it fits, commits it to the oracle's model.
func (o *staleOracle) part(p fsm.PlanPart) bool {
	overlay := ledger.NewOverlay(o.led)
	next := map[string]*fsm.Bundle{}
	for i := range p.Updates {
		u := &p.Updates[i]
		old := o.bundle(u.BundleID)
		if old == nil || next[u.BundleID] != nil || len(p.Services) > 0 {
			return false
		}
		b := o.update(overlay, old, u)
		if b == nil {
			return false
		}
		next[u.BundleID] = b
	}
	overlay.Commit()
	for id, b := range next {
		o.bundles[id] = b
	}
	return true
}

// update applies u to a copy of old, or returns nil when a rule breaks.
func (o *staleOracle) update(overlay *ledger.Overlay, old *fsm.Bundle, u *fsm.BundleUpdate) *fsm.Bundle {
	b := copyBundle(old)
	if b.Deleting && (len(u.Place) > 0 || u.Promote) {
		return nil
	}
	if u.Promote {
		b.Replicas[0], b.Replicas[1] = b.Replicas[1], b.Replicas[0]
	}
	for _, r := range u.Release {
		j := slotJob(b, r.Slot, r.Job)
		if j == nil || !j.Placed() {
			return nil
		}
		ledger.Release(overlay, ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: r.Job})
		*j = fsm.JobPlacement{Name: j.Name}
	}
	for _, pl := range u.Place {
		if !o.place(overlay, b, pl) {
			return nil
		}
	}
	if u.SetDegradations {
		b.Degradations = u.Degradations
	}
	if len(u.Place) > 0 && !o.replicaRules(b, u) {
		return nil
	}
	return b
}

func (o *staleOracle) place(overlay *ledger.Overlay, b *fsm.Bundle, pl fsm.Place) bool {
	j, spec, n := slotJob(b, pl.Slot, pl.Job), b.Spec.Job(pl.Job), o.st.Node(pl.Node)
	if j == nil || j.Placed() || spec == nil || n == nil || !o.stagesPass(&b.Spec, pl.Slot, spec, n.ID) {
		return false
	}
	pool := o.st.Pool(b.Spec.SlotPool(pl.Slot))
	if !grantServes(pool.Effective(spec.Requirements), pl.Grant, n.Inventory()) {
		return false
	}
	k := ledger.Key{Bundle: b.ID(), Replica: pl.Slot, Job: pl.Job}
	if ledger.Reserve(overlay, ledger.Reservation{Key: k, Node: n.ID, Pool: n.Pool, Grant: pl.Grant}) != nil {
		return false
	}
	*j = fsm.JobPlacement{Name: pl.Job, NodeID: n.ID, Grant: pl.Grant}
	return true
}

// stagesPass runs the scheduler's static stages for one job alone on a node.
func (o *staleOracle) stagesPass(spec *fsm.BundleSpec, slot int, job *fsm.Job, node string) bool {
	alone := *job
	alone.CoLocateWith, alone.SeparateFrom = nil, nil
	single := fsm.BundleSpec{ID: spec.ID, Pool: spec.Pool, Resilience: spec.Resilience, Jobs: []fsm.Job{alone}}
	t := newTask(o.sn, Gang{Spec: &single, Slot: slot})
	s := newSearch(o.sn, t, o.sn.Store(), 0, false, false)
	c := &cycle{s: s, g: t.groups[0], n: o.sn.idx.node(node)}
	for _, f := range []filter{poolFilter{}, placeableFilter{}, taintFilter{}, runtimeFilter{}, constraintFilter{}} {
		if !f.Filter(c) {
			return false
		}
	}
	return true
}

// grantServes: the grant holds the memory the request asks for, and the
// node still offers what the request matched when the grant was chosen:
// every requested capability with its attributes, and GPUs of the
// requested model.
func grantServes(req ledger.Request, g ledger.Grant, inv ledger.Inventory) bool {
	if g.MemoryMiB < req.MemoryMiB {
		return false
	}
	for _, cr := range req.Capabilities {
		i := slices.IndexFunc(inv.Capabilities, func(c ledger.Capability) bool { return c.Name == cr.Name })
		if i < 0 {
			return false
		}
		for k, v := range cr.AttributeMatches {
			if inv.Capabilities[i].Attributes[k] != v {
				return false
			}
		}
	}
	devices := slices.Clone(g.ExclusiveGPUs)
	if g.GPU != nil {
		devices = append(devices, g.GPU.Index)
	}
	for _, idx := range devices {
		i := slices.IndexFunc(inv.GPUs, func(d ledger.GPU) bool { return d.Index == idx })
		if i < 0 || (req.GPUModel != "" && inv.GPUs[i].Model != req.GPUModel) {
			return false
		}
	}
	return true
}

// replicaRules checks the replicas u places into, as they end up.
func (o *staleOracle) replicaRules(b *fsm.Bundle, u *fsm.BundleUpdate) bool {
	for i := range b.Replicas {
		r := &b.Replicas[i]
		if !slices.ContainsFunc(u.Place, func(p fsm.Place) bool { return p.Slot == r.Slot }) {
			continue
		}
		if !o.intraReplica(&b.Spec, r) {
			return false
		}
	}
	return o.forbidsRecorded(b)
}

func (o *staleOracle) intraReplica(spec *fsm.BundleSpec, r *fsm.Replica) bool {
	root := unionGroups(spec)
	node := func(i int) string {
		return slotJob(&fsm.Bundle{Replicas: []fsm.Replica{*r}}, r.Slot, spec.Jobs[i].Name).NodeID
	}
	azs := map[string]bool{}
	for i := range spec.Jobs {
		if node(i) == "" {
			continue
		}
		azs[o.st.Node(node(i)).AZ()] = true
		for k := range spec.Jobs {
			if k == i || node(k) == "" {
				continue
			}
			together := root[i] == root[k]
			apart := slices.Contains(spec.Jobs[i].SeparateFrom, spec.Jobs[k].Name)
			if (together && node(i) != node(k)) || (apart && node(i) == node(k)) {
				return false
			}
		}
	}
	return spec.Placement.SameAz != fsm.SameAzHard || len(azs) <= 1
}

// forbidsRecorded: every forbidden domain two complete replicas share is
// among the bundle's degradations, as the scheduler's own derivation names
// them (a partial backup is no backup: the bundle records noBackup).
func (o *staleOracle) forbidsRecorded(b *fsm.Bundle) bool {
	if b.Spec.Resilience == nil || len(b.Replicas) < 2 || !b.Replicas[0].Complete() || !b.Replicas[1].Complete() {
		return true
	}
	prim, back := o.batch.domainsOf(placedOf(&b.Replicas[0])), o.batch.domainsOf(placedOf(&b.Replicas[1]))
	for _, d := range o.batch.sharedDomains(b.Spec.Resilience, prim, back) {
		if !b.HasDegradation(d.Code) {
			return false
		}
	}
	return true
}

func slotJob(b *fsm.Bundle, slot int, name string) *fsm.JobPlacement {
	for i := range b.Replicas {
		if b.Replicas[i].Slot != slot {
			continue
		}
		for k := range b.Replicas[i].Jobs {
			if b.Replicas[i].Jobs[k].Name == name {
				return &b.Replicas[i].Jobs[k]
			}
		}
	}
	return nil
}

func copyBundle(b *fsm.Bundle) *fsm.Bundle {
	cp := *b
	cp.Replicas = slices.Clone(b.Replicas)
	for i := range cp.Replicas {
		cp.Replicas[i].Jobs = slices.Clone(b.Replicas[i].Jobs)
	}
	return &cp
}
