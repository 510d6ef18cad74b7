package scheduler

import (
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// oracle decides by brute force whether one replica can be placed:
// enumerate every assignment of its jobs to the pool's nodes and check every
// hard rule directly, with the ledger deciding what fits on a node (every
// order of the jobs sharing a node is tried, since GPU devices are bins).
// It shares no placement code with the engine.
type oracle struct {
	spec     *fsm.BundleSpec
	pool     *fsm.Pool
	nodes    []*fsm.Node
	usage    map[string]ledger.Usage
	poolUsed ledger.PoolUsage
	// clusterCaps bound poolUsed too: the generated worlds have one pool,
	// so the cluster holds exactly what the pool holds.
	clusterCaps ledger.PoolCaps
	hardAZ      bool
	forbid      struct{ nodes, azs, clouds map[string]bool }
	together    [][]bool // together[i][k]: jobs i and k must share a node
	apart       [][]bool
}

func newOracle(st *fsm.State, spec *fsm.BundleSpec, slot int, hardAZ bool, extra []fsm.Place) *oracle {
	pool := st.Pool(spec.SlotPool(slot))
	o := &oracle{spec: spec, pool: pool, nodes: st.Nodes(pool.Name), usage: map[string]ledger.Usage{}, poolUsed: pool.Usage, hardAZ: hardAZ}
	if row := st.CapScopeRow(ledger.ClusterScope); row != nil {
		o.clusterCaps = row.Caps
	}
	for _, n := range o.nodes {
		o.usage[n.ID] = n.Usage
	}
	for _, p := range extra {
		o.usage[p.Node] = o.usage[p.Node].Add(p.Grant)
		if st.Node(p.Node).Pool == pool.Name {
			o.poolUsed = o.poolUsed.Add(p.Grant)
		}
	}
	o.forbid.nodes, o.forbid.azs, o.forbid.clouds = map[string]bool{}, map[string]bool{}, map[string]bool{}
	o.relations()
	return o
}

// forbidDomains keeps the replica off the given nodes' domains.
func (o *oracle) forbidDomains(st *fsm.State, nodes []string, node, az, cloud bool) {
	for _, id := range nodes {
		n := st.Node(id)
		o.forbid.nodes[id] = node
		o.forbid.azs[n.AZ()] = o.forbid.azs[n.AZ()] || az
		o.forbid.clouds[n.Cloud()] = o.forbid.clouds[n.Cloud()] || cloud
	}
}

// relations computes must-share (transitive closure of coLocateWith and
// sameNodeDefault) and must-not-share (separateFrom, symmetric).
func (o *oracle) relations() {
	jobs := o.spec.Jobs
	n := len(jobs)
	o.together, o.apart = make([][]bool, n), make([][]bool, n)
	idx := map[string]int{}
	for i, j := range jobs {
		o.together[i], o.apart[i] = make([]bool, n), make([]bool, n)
		o.together[i][i] = true
		idx[j.Name] = i
	}
	for i, j := range jobs {
		for _, other := range j.CoLocateWith {
			o.together[i][idx[other]], o.together[idx[other]][i] = true, true
		}
		for _, other := range j.SeparateFrom {
			o.apart[i][idx[other]], o.apart[idx[other]][i] = true, true
		}
		for k, jk := range jobs {
			bare := func(x fsm.Job) bool { return len(x.CoLocateWith) == 0 && len(x.SeparateFrom) == 0 }
			if o.spec.Placement.SameNodeDefault && bare(j) && bare(jk) {
				o.together[i][k] = true
			}
		}
	}
	for m := range n { // Floyd–Warshall closure
		for i := range n {
			for k := range n {
				o.together[i][k] = o.together[i][k] || (o.together[i][m] && o.together[m][k])
			}
		}
	}
}

// feasible reports whether some assignment satisfies every hard rule, and
// one such assignment (job → node).
func (o *oracle) feasible() (bool, []string) {
	assign := make([]string, len(o.spec.Jobs))
	ok := o.try(assign, 0)
	return ok, assign
}

func (o *oracle) try(assign []string, i int) bool {
	if i == len(assign) {
		return o.complete(assign)
	}
	for _, n := range o.nodes {
		if !o.allowed(i, n) {
			continue
		}
		fits := true
		for k := range i {
			same := assign[k] == n.ID
			if (o.together[i][k] && !same) || (o.apart[i][k] && same) {
				fits = false
			}
		}
		if !fits {
			continue
		}
		assign[i] = n.ID
		if o.try(assign, i+1) {
			return true
		}
	}
	return false
}

// allowed checks the rules that concern one job and one node.
func (o *oracle) allowed(i int, n *fsm.Node) bool {
	j := o.spec.Jobs[i]
	if !n.Placeable() || tierOf(o.pool, n.Cloud()) < 0 {
		return false
	}
	if o.forbid.nodes[n.ID] || o.forbid.azs[n.AZ()] || o.forbid.clouds[n.Cloud()] {
		return false
	}
	for _, t := range n.Taints {
		if !slices.Contains(j.Tolerations(), t) {
			return false
		}
	}
	for _, c := range j.Constraints() {
		if !exprMeaning(c)(n) {
			return false
		}
	}
	return runsOneOf(n, j.Runtime)
}

// runsOneOf: a node runs what it lists, or exec when it lists nothing; the
// generators use canonical names only.
func runsOneOf(n *fsm.Node, r *fsm.RuntimeRequirement) bool {
	if r == nil {
		return true
	}
	offers := n.Runtimes
	if len(offers) == 0 {
		offers = []string{"exec"}
	}
	for _, want := range r.OneOf {
		if slices.Contains(offers, want) {
			return true
		}
	}
	return false
}

func (o *oracle) complete(assign []string) bool {
	byID := map[string]*fsm.Node{}
	for _, n := range o.nodes {
		byID[n.ID] = n
	}
	if o.hardAZ {
		for _, id := range assign {
			if byID[id].AZ() != byID[assign[0]].AZ() {
				return false
			}
		}
	}
	var total ledger.PoolUsage
	for i, j := range o.spec.Jobs {
		r := o.pool.Effective(j.Requirements)
		total.Capacity += r.Capacity
		total.Cores += r.Cores
		total.MemoryMiB += r.MemoryMiB
		_ = i
	}
	for _, caps := range []ledger.PoolCaps{o.pool.Caps, o.clusterCaps} {
		if (caps.MaxCapacity > 0 && o.poolUsed.Capacity+total.Capacity > caps.MaxCapacity) ||
			(caps.MaxCores > 0 && o.poolUsed.Cores+total.Cores > caps.MaxCores) ||
			(caps.MaxMemoryMiB > 0 && o.poolUsed.MemoryMiB+total.MemoryMiB > caps.MaxMemoryMiB) {
			return false
		}
	}
	for id, n := range byID {
		var reqs []ledger.Request
		for i, a := range assign {
			if a == id {
				reqs = append(reqs, o.pool.Effective(o.spec.Jobs[i].Requirements))
			}
		}
		if len(reqs) > 0 && !fitsSomeOrder(n.Inventory(), o.usage[id], reqs) {
			return false
		}
	}
	return true
}

// fitsSomeOrder tries every order of reqs with ledger.Fit.
func fitsSomeOrder(inv ledger.Inventory, used ledger.Usage, reqs []ledger.Request) bool {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	return permute(order, 0, func(p []int) bool {
		u := used
		for _, i := range p {
			g, err := ledger.Fit(inv, u, reqs[i])
			if err != nil {
				return false
			}
			u = u.Add(g)
		}
		return true
	})
}
