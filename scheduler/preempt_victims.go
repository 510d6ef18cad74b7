package scheduler

import (
	"cmp"
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// Victim is one replica a preemption evicts.
type Victim struct {
	BundleID string
	Priority string
	// Slot is the evicted replica's ledger slot.
	Slot int
	// Primary is true when the evicted replica was the bundle's primary;
	// Promoted, when its backup takes over in the same update.
	Primary  bool
	Promoted bool
	// Jobs are the evicted replica's jobs that held reservations.
	Jobs []string

	band int
	held []ledger.Reservation // what the replica holds, as the ledger has it
}

// preferVictim orders candidates (DESIGN §3.6): backups before primaries
// (evicting a backup interrupts nothing), then the lowest band, then the
// fewest jobs, then bundle id and slot so the order is total.
func preferVictim(a, b *Victim) int {
	return cmp.Or(
		boolCmp(a.Primary, b.Primary),
		cmp.Compare(b.band, a.band),
		cmp.Compare(len(a.held), len(b.held)),
		cmp.Compare(a.BundleID, b.BundleID),
		cmp.Compare(a.Slot, b.Slot),
	)
}

// preemption is one Preempt call's search state.
type preemption struct {
	b      *Batch
	bundle *fsm.Bundle
	target int // replica index placed: 0 primary, 1 backup
	band   int
	seed   uint64
	pool   string  // the target replica's pool
	prim   domains // the primary's failure domains, for a backup target
	cands  []*Victim
	trials int
}

func (b *Batch) newPreemption(bundle *fsm.Bundle, target int) *preemption {
	spec := &bundle.Spec
	p := &preemption{
		b: b, bundle: bundle, target: target, band: spec.EffectiveBand(),
		seed: b.bundleSeed(bundle),
		pool: spec.SlotPool(bundle.Replicas[target].Slot),
	}
	if target == 1 {
		p.prim = b.domainsOf(placedOf(&bundle.Replicas[0]))
	}
	return p
}

// try releases set hypothetically, places the target replica and takes
// the releases back.
func (p *preemption) try(set []*Victim, explain bool) GangResult {
	mark := p.b.overlay.checkpoint()
	defer p.b.overlay.rollback(mark)
	p.release(set)
	return p.place(explain)
}

// release gives the set's resources back to their nodes and pools in the
// overlay, as ledger.Release would, but leaves the reservation rows: a
// trial is always undone and the search reads only usage, so the row
// lookups and deletions (most of a release's cost) are skipped.
func (p *preemption) release(set []*Victim) {
	ov := p.b.overlay
	for _, v := range set {
		for _, r := range v.held {
			if _, used, ok := ov.Node(r.Node); ok {
				ov.SetUsage(r.Node, used.Sub(r.Grant))
			}
			_, pool := ov.Pool(r.Pool)
			ov.SetPoolUsage(r.Pool, pool.Sub(r.Grant))
			for _, sc := range ov.PoolScopes(r.Pool) {
				_, used := ov.Pool(sc)
				ov.SetPoolUsage(sc, used.Sub(r.Grant))
			}
		}
	}
}

// place is one trial: the target replica placed against the overlay as fill
// will place it (same searches, same seeds).
func (p *preemption) place(explain bool) GangResult {
	p.trials++
	if p.target == 0 {
		return p.b.placePrimary(p.bundle, p.seed, !explain)
	}
	return p.b.climb(&p.bundle.Spec, &p.bundle.Replicas[1], p.prim, p.seed, !explain)
}

// onePerBundle keeps the first (most preferred) candidate of each bundle.
func onePerBundle(list []*Victim) []*Victim {
	seen := map[string]bool{}
	return slices.DeleteFunc(slices.Clone(list), func(v *Victim) bool {
		dup := seen[v.BundleID]
		seen[v.BundleID] = true
		return dup
	})
}

// poolCapped reports whether the target pool, its cap group or the cluster
// has aggregate caps: then any reservation in the pool, wherever it sits,
// can stand in the way. (Victims are sought in the pool only: a cluster or
// group cap that reservations of other pools fill is not preempted for.)
func (p *preemption) poolCapped() bool {
	ov := p.b.overlay
	caps, _ := ov.Pool(p.pool)
	for _, sc := range ov.PoolScopes(p.pool) {
		if c, _ := ov.Pool(sc); c != (ledger.PoolCaps{}) {
			return true
		}
	}
	return caps.MaxCapacity > 0 || caps.MaxCores > 0 || caps.MaxMemoryMiB > 0
}

// candidates collects the eligible replicas holding reservations on nodes
// that could host the target replica, at most maxVictimsPerNode per node
// (the most preferred) and maxVictims in all, in preference order.
func (p *preemption) candidates() []*Victim {
	view := p.b.snap.idx.view
	known := map[ledger.Key]*Victim{} // by {bundle, slot}; nil when ineligible
	listed := map[*Victim]bool{}
	var out []*Victim
	for _, pos := range p.relevantNodes() {
		var here []*Victim
		for _, r := range view.NodeReservations(p.b.snap.idx.nodes[pos].node.ID) {
			rk := ledger.Key{Bundle: r.Key.Bundle, Replica: r.Key.Replica}
			v, ok := known[rk]
			if !ok {
				v = p.victimOf(r.Key.Bundle, r.Key.Replica)
				known[rk] = v
			}
			if v != nil && !slices.Contains(here, v) {
				here = append(here, v)
			}
		}
		slices.SortFunc(here, preferVictim)
		for _, v := range here[:min(len(here), maxVictimsPerNode)] {
			if !listed[v] {
				listed[v] = true
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, preferVictim)
	return out[:min(len(out), maxVictims)]
}

// victimOf returns a replica as a candidate, or nil when it may not be
// evicted: its bundle is gone, being deleted, already changed by this
// batch's plan (which also keeps a bundle from losing both replicas), not
// in a strictly lower band, or a primary while a backup is being placed.
func (p *preemption) victimOf(id string, slot int) *Victim {
	vb := p.b.snap.idx.view.Bundle(id)
	if vb == nil || vb.Deleting || p.b.updated[id] || vb.Spec.EffectiveBand() <= p.band || vb.Spec.Kind != "" {
		return nil
	}
	i := slices.IndexFunc(vb.Replicas, func(r fsm.Replica) bool { return r.Slot == slot })
	if i < 0 || (i == 0 && p.target == 1) {
		return nil
	}
	v := &Victim{BundleID: id, Priority: vb.Spec.EffectivePriority(), Slot: slot, Primary: i == 0, band: vb.Spec.EffectiveBand()}
	// A placed job holds exactly its reservation (§2.4), and the batch has
	// not touched the bundle, so the snapshot's placement is the overlay's.
	for _, j := range vb.Replicas[i].Jobs {
		n := p.b.snap.idx.node(j.NodeID)
		if !j.Placed() || n == nil {
			continue
		}
		v.Jobs = append(v.Jobs, j.Name)
		v.held = append(v.held, ledger.Reservation{
			Key: ledger.Key{Bundle: id, Replica: slot, Job: j.Name}, Node: j.NodeID, Pool: n.node.Pool, Grant: j.Grant,
		})
	}
	if len(v.held) == 0 {
		return nil
	}
	return v
}

// relevantNodes are the target pool's nodes where some group of the replica
// would fit if the node held nothing else (pool, placeable, taints,
// constraints, and the resource stages against the bare inventory):
// evicting anything elsewhere frees nothing the replica can use. Under pool
// caps every node of the pool counts, since any reservation in the pool
// holds part of the cap.
func (p *preemption) relevantNodes() []int32 {
	sn := p.b.snap
	rep := &p.bundle.Replicas[p.target]
	t := newTask(sn, Gang{Spec: &p.bundle.Spec, Slot: rep.Slot, Placed: placedOf(rep), Removed: p.b.removed})
	if p.poolCapped() {
		return t.pool.nodes
	}
	s := newSearch(sn, t, p.b.overlay, p.seed, false, false)
	var out []int32
	for _, pos := range t.pool.nodes {
		if s.couldHost(pos) {
			out = append(out, pos)
		}
	}
	return out
}

// couldHost runs each group's chain on a node as if it were empty. The pool
// caps stage is skipped (evictions free the caps too); the replica-relative
// stages pass on an empty node outside a hard same-AZ search.
func (s *search) couldHost(pos int32) bool {
	n := &s.snap.idx.nodes[pos]
	for _, g := range s.t.groups {
		if len(g.place) == 0 || (g.fixed != "" && g.fixed != n.node.ID) {
			continue
		}
		c := &cycle{s: s, g: g, n: n, dem: &g.dem}
		fits := true
		for _, f := range s.chains[g.depth] {
			if _, caps := f.(poolCapsFilter); !caps && !f.Filter(c) {
				fits = false
				break
			}
		}
		if fits {
			return true
		}
	}
	return false
}
