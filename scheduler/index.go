package scheduler

import (
	"cmp"
	"slices"
	"sync"

	"github.com/google/cel-go/interpreter"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// nodeInfo is what placement needs of one node, computed once per snapshot.
type nodeInfo struct {
	node      *fsm.Node
	inv       ledger.Inventory
	usage     ledger.Usage // the snapshot's, kept here so scans stay in one array
	taints    []string
	rt        fsm.RuntimeSet // the runtimes it offers
	idHash    uint64         // tie-break input: stable under unrelated node changes
	az, cloud string
	tier      int // position in its pool's cascade; -1 when no tier takes its cloud
	placeable bool
	pos       int32

	act *actCell // CEL input, built on first expression evaluation
}

// actCell holds a node's CEL input. Cells are shared by the indexes of
// successive snapshots while the node's labels and inventory stay the same,
// so they are built once, safely, whichever snapshot gets there first.
type actCell struct {
	once sync.Once
	act  interpreter.Activation
}

// bucket is one tier of one pool. Its lists hold only placeable nodes, sorted
// by id, so the cheap static predicates (pool, tier, placeable) are answered
// by the index; a replica held to one AZ, or kept out of the other replica's
// AZs and clouds, scans only the failure domains it may use; and a job that
// needs a capability or a GPU scans only the nodes that have one.
type bucket struct {
	all      []int32
	domains  []domainList       // by az, then cloud
	byDomain map[[2]string]int  // {az, cloud} → index into domains; build only
	byCap    map[string][]int32 // looked up, never iterated
	gpu      []int32
}

// domainList is the placeable nodes of one (AZ, cloud) failure domain.
type domainList struct {
	az, cloud string
	nodes     []int32
}

// poolIndex is the index of one pool.
type poolIndex struct {
	name  string
	cfg   *fsm.Pool // nil when the pool is not configured
	nodes []int32   // every node of the pool, placeable or not, by id
	tiers []*bucket // cost cascade order
	azs   []string  // distinct AZs of the tiered placeable nodes, sorted
}

// index is built once per state snapshot (or refreshed from the previous
// one, see refreshIndex). Everything in it is read-only once built, except
// the lazily filled empty map and CEL cells, so indexes can share parts.
type index struct {
	view  View
	nodes []nodeInfo
	byID  map[string]int32
	pools map[string]*poolIndex // pools with nodes; read-only after the build
	empty map[string]*poolIndex // pools without nodes, filled on first use
}

func buildIndex(v View, all []*fsm.Node) *index {
	x := &index{
		view:  v,
		nodes: make([]nodeInfo, len(all)),
		byID:  make(map[string]int32, len(all)),
		pools: map[string]*poolIndex{},
		empty: map[string]*poolIndex{},
	}
	cells := make([]actCell, len(all))
	for i, n := range all {
		p := x.pools[n.Pool]
		if p == nil {
			p = newPoolIndex(n.Pool, v.Pool(n.Pool))
			x.pools[n.Pool] = p
		}
		info := &x.nodes[i]
		*info = nodeInfo{
			node: n, inv: n.Inventory(), usage: n.Usage, taints: n.Taints, rt: n.RuntimeSet(), idHash: hashString(n.ID), pos: int32(i),
			az: n.AZ(), cloud: n.Cloud(), placeable: n.Placeable(),
			tier: tierOf(p.cfg, n.Cloud()), act: &cells[i],
		}
		x.byID[n.ID] = int32(i)
		p.add(info)
	}
	for _, p := range x.pools {
		slices.Sort(p.azs)
		p.azs = slices.Compact(p.azs)
		for _, b := range p.tiers {
			slices.SortFunc(b.domains, func(a, c domainList) int {
				return cmp.Or(cmp.Compare(a.az, c.az), cmp.Compare(a.cloud, c.cloud))
			})
			b.byDomain = nil
		}
	}
	return x
}

// tierOf is the first tier whose cloud is the node's (DESIGN §2.2); a pool
// without tiers has one tier holding every node.
func tierOf(p *fsm.Pool, cloud string) int {
	if p == nil || len(p.Tiers) == 0 {
		return 0
	}
	for i, t := range p.Tiers {
		if t.Cloud == cloud {
			return i
		}
	}
	return -1
}

func (x *index) node(id string) *nodeInfo {
	i, ok := x.byID[id]
	if !ok {
		return nil
	}
	return &x.nodes[i]
}

// pool returns the index of a pool, creating an empty one for a pool no node
// is in yet (placement then explains that nothing is in it).
func (x *index) pool(name string) *poolIndex {
	if p, ok := x.pools[name]; ok {
		return p
	}
	if p, ok := x.empty[name]; ok {
		return p
	}
	p := newPoolIndex(name, x.view.Pool(name))
	x.empty[name] = p
	return p
}

func newPoolIndex(name string, cfg *fsm.Pool) *poolIndex {
	p := &poolIndex{name: name, cfg: cfg}
	n := 1
	if cfg != nil && len(cfg.Tiers) > 0 {
		n = len(cfg.Tiers)
	}
	for range n {
		p.tiers = append(p.tiers, &bucket{byDomain: map[[2]string]int{}, byCap: map[string][]int32{}})
	}
	return p
}

func (p *poolIndex) add(n *nodeInfo) {
	p.nodes = append(p.nodes, n.pos)
	if !n.placeable || n.tier < 0 {
		return
	}
	b := p.tiers[n.tier]
	b.all = append(b.all, n.pos)
	key := [2]string{n.az, n.cloud}
	d, ok := b.byDomain[key]
	if !ok {
		d = len(b.domains)
		b.byDomain[key] = d
		b.domains = append(b.domains, domainList{az: n.az, cloud: n.cloud})
		p.azs = append(p.azs, n.az)
	}
	b.domains[d].nodes = append(b.domains[d].nodes, n.pos)
	for _, c := range n.inv.Capabilities {
		b.byCap[c.Name] = append(b.byCap[c.Name], n.pos)
	}
	if len(n.inv.GPUs) > 0 {
		b.gpu = append(b.gpu, n.pos)
	}
}

// candidates returns the narrowest set of tier lists that still holds every
// node that could pass the group's index-answerable predicates: the failure
// domains the replica may use (its AZ when pinned to one; not a forbidden AZ
// or cloud), else a capability it needs or GPU presence, whichever is
// shortest. Stages still check everything; this only skips nodes that
// cannot pass.
func (b *bucket) candidates(s *search, g *group) [][]int32 {
	f := &s.t.forbid
	segs, total := [][]int32{b.all}, len(b.all)
	if s.azFixed || len(f.azs) > 0 || len(f.clouds) > 0 {
		segs, total = nil, 0
		for _, d := range b.domains {
			if (s.azFixed && d.az != s.az) || f.azs[d.az] || f.clouds[d.cloud] {
				continue
			}
			segs = append(segs, d.nodes)
			total += len(d.nodes)
		}
	}
	if total == 0 {
		return nil
	}
	narrow := func(l []int32) {
		if len(l) < total {
			segs, total = [][]int32{l}, len(l)
		}
	}
	for _, c := range g.dem.caps {
		narrow(b.byCap[c.name])
	}
	if g.dem.needsGPU() {
		narrow(b.gpu)
	}
	if total == 0 {
		return nil
	}
	return segs
}
