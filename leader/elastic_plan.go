package leader

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// Bounds on one pass of planning: bundles considered, extra nodes one
// bundle may need (a bundle whose jobs must be kept apart), spawns created
// (demand, warm pools and floors together) and placement simulations run.
// Whatever a pass leaves undone the next one plans, on the state the
// spawns it did create have changed, so no pool can make a pass unbounded
// (a warm pool of 10^9 once filled memory in seconds).
const (
	maxDemandPerPass      = 32
	maxNodesPerBundle     = 4
	maxSpawnsPerPass      = 64
	maxSimulationsPerPass = 512
)

// blocked is why an elastic pool provisions nothing for some bundles.
type blocked struct {
	stage, detail string
}

// demandPlan is what one pass decided: the spawns to create, the bundles
// that cannot have a node and why, and the nodes (real or coming) that the
// simulated placement used, which are not idle.
type demandPlan struct {
	spawns  []*fsm.Spawn
	blocked map[blocked][]string
	used    map[string]bool
}

// planner simulates the unplaceable bundles of elastic pools on the state
// plus the nodes being provisioned, and adds the smallest instance types
// that make them fit, within the pools' maxNodes and the global cap.
type planner struct {
	st       *fsm.State
	engine   *scheduler.Engine
	pools    map[string]*fsm.Pool // elastic pools by name
	pending  []*fsm.Node          // nodes spawns will bring
	extras   []*fsm.Node          // nodes this pass adds
	placed   []*fsm.Bundle        // bundles the simulation fits, in order
	counts   map[string]fsm.PoolCount
	global   fsm.PoolCount
	maxTotal int
	// problem says why a pool cannot provision now ("" when it can).
	problem func(*fsm.Pool) string
	plan    *demandPlan
	sims    int // placement simulations run this pass
}

func newPlanner(st *fsm.State, engine *scheduler.Engine, pools map[string]*fsm.Pool, maxTotal int, problem func(*fsm.Pool) string) *planner {
	pl := &planner{
		st: st, engine: engine, pools: pools, pending: pendingNodes(st, st.Spawns("")),
		counts: map[string]fsm.PoolCount{}, global: st.CountProvisioned(), maxTotal: maxTotal, problem: problem,
		plan: &demandPlan{blocked: map[blocked][]string{}, used: map[string]bool{}},
	}
	for name := range pools {
		pl.counts[name] = st.CountPool(name)
	}
	return pl
}

// run plans demand, then the warm pools and minNodes floors.
func (pl *planner) run() *demandPlan {
	for _, b := range pl.demand() {
		pl.provisionFor(b)
	}
	pl.plan.used = pl.usedNodes()
	for _, name := range sortedPoolNames(pl.pools) {
		pl.fillWarm(pl.pools[name])
	}
	return pl.plan
}

// demand lists unplaceable bundles of elastic pools, and bundles missing a
// backup from one, in queue order.
func (pl *planner) demand() []*fsm.Bundle {
	var out []*fsm.Bundle
	for _, b := range pl.st.BundlesInState(fsm.StateUnplaceable, fsm.StateDegraded) {
		if len(pl.missingPools(b)) > 0 {
			out = append(out, b)
		}
	}
	sortByBand(out)
	if len(out) > maxDemandPerPass {
		out = out[:maxDemandPerPass]
	}
	return out
}

// missingPools are the elastic pools of the bundle's incomplete replicas.
func (pl *planner) missingPools(b *fsm.Bundle) []string {
	var out []string
	for i := range b.Replicas {
		r := &b.Replicas[i]
		name := b.Spec.SlotPool(r.Slot)
		if !r.Complete() && pl.pools[name] != nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func (pl *planner) provisionFor(b *fsm.Bundle) {
	if pl.outOfBudget(1) {
		return // planned on a later pass
	}
	if pl.fits(b, nil) {
		pl.placed = append(pl.placed, b)
		return
	}
	pools := pl.missingPools(b)
	for _, name := range pools {
		if why := pl.problem(pl.pools[name]); why != "" {
			pl.block(b, fsm.StageProvisioner, fmt.Sprintf("pool %s %s", name, why))
			return
		}
	}
	if stage, detail := pl.scopeCapped(b, pools); stage != "" {
		pl.block(b, stage, detail)
		return
	}
	need, searched := pl.choose(b, pools)
	if !searched || pl.outOfBudget(len(need)) {
		return // the pass's budget ran out: planned on a later pass
	}
	if need == nil {
		pl.block(b, fsm.StageInstanceType, pl.gateDetail(b, pools))
		return
	}
	if stage, detail := pl.capped(need); stage != "" {
		pl.block(b, stage, detail)
		return
	}
	for _, probe := range need {
		it := *pl.pools[probe.Pool].InstanceTypeNamed(probe.Labels[instanceTypeLabel])
		n := virtualNode(newSpawnNodeID(probe.Pool), probe.Pool, it)
		pl.extras = append(pl.extras, n)
		pl.addSpawn(n, it, fsm.SpawnForDemand, b.ID())
	}
	pl.placed = append(pl.placed, b)
}

func (pl *planner) block(b *fsm.Bundle, stage, detail string) {
	k := blocked{stage: stage, detail: detail}
	pl.plan.blocked[k] = append(pl.plan.blocked[k], b.ID())
}

// instanceTypeLabel tags a probe node with the instance type it stands for;
// probes never reach the state.
const instanceTypeLabel = "~instanceType"

// choose returns the fewest, then smallest, nodes of one instance type that
// make b fit: one node of the smallest type that does, else two, and so on.
// searched is false when the pass's simulations ran out first.
func (pl *planner) choose(b *fsm.Bundle, pools []string) (probes []*fsm.Node, searched bool) {
	types := pl.typesBySize(pools)
	for k := 1; k <= maxNodesPerBundle; k++ {
		for _, pt := range types {
			if pl.sims >= maxSimulationsPerPass {
				return nil, false
			}
			probes := make([]*fsm.Node, k)
			for i := range probes {
				probes[i] = probeNode(pt, i)
			}
			if pl.fits(b, probes) {
				return probes, true
			}
		}
	}
	return nil, true
}

// outOfBudget reports whether adding spawns more spawns, or running one more
// simulation, would go over the pass's budget.
func (pl *planner) outOfBudget(spawns int) bool {
	return len(pl.plan.spawns)+spawns > maxSpawnsPerPass || pl.sims >= maxSimulationsPerPass
}

type poolType struct {
	pool string
	it   fsm.InstanceType
}

func probeNode(pt poolType, i int) *fsm.Node {
	n := virtualNode(fmt.Sprintf("~probe-%d", i), pt.pool, pt.it)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[instanceTypeLabel] = pt.it.Name
	return n
}

// typesBySize orders the pools' instance types smallest first: capacity,
// then cores, memory, GPUs, capabilities, then name.
func (pl *planner) typesBySize(pools []string) []poolType {
	var out []poolType
	for _, name := range pools {
		for _, it := range pl.pools[name].InstanceTypes {
			out = append(out, poolType{pool: name, it: it})
		}
	}
	slices.SortStableFunc(out, func(a, b poolType) int {
		return cmp.Or(cmp.Compare(a.it.TotalCapacity, b.it.TotalCapacity), cmp.Compare(a.it.TotalCores, b.it.TotalCores),
			cmp.Compare(a.it.TotalMemoryMiB, b.it.TotalMemoryMiB), cmp.Compare(len(a.it.GPUs), len(b.it.GPUs)), cmp.Compare(len(a.it.Capabilities), len(b.it.Capabilities)),
			cmp.Compare(a.it.Name, b.it.Name))
	})
	return out
}

// fits simulates the bundles placed so far and then b on the state with the
// pending nodes, this pass's extras and probes.
func (pl *planner) fits(b *fsm.Bundle, probes []*fsm.Node) bool {
	pl.sims++
	batch := pl.batch(probes)
	for _, p := range pl.placed {
		batch.Place(p)
	}
	res := batch.Place(b)
	return res.PrimaryPlaced && (b.Spec.Resilience == nil || res.BackupPlaced)
}

func (pl *planner) batch(probes []*fsm.Node) *scheduler.Batch {
	view := newElasticView(pl.st, pl.pending, pl.extras, probes)
	return pl.engine.Snapshot(view).NewBatch(pl.st.Index())
}

// usedNodes replays the fitted bundles and returns the nodes they land on.
func (pl *planner) usedNodes() map[string]bool {
	used := map[string]bool{}
	batch := pl.batch(nil)
	for _, b := range pl.placed {
		if u := batch.Place(b).Update; u != nil {
			for _, p := range u.Place {
				used[p.Node] = true
			}
		}
	}
	for _, n := range pl.extras {
		used[n.ID] = true
	}
	return used
}

// capped names the cap that adding nodes would exceed.
func (pl *planner) capped(nodes []*fsm.Node) (stage, detail string) {
	add := map[string]int{}
	for _, n := range nodes {
		add[n.Pool]++
	}
	for _, name := range sortedPoolNames(pl.pools) {
		p, c := pl.pools[name], pl.counts[name]
		if add[name] > 0 && p.MaxNodes > 0 && c.Total()+add[name] > p.MaxNodes {
			return fsm.StagePoolMaxNodes, fsm.PoolCapDetail(name, p.MaxNodes, c)
		}
	}
	if pl.maxTotal > 0 && pl.global.Total()+len(nodes) > pl.maxTotal {
		return fsm.StageMaxProvisionedNodes, fsm.GlobalCapDetail(pl.maxTotal, pl.global)
	}
	return "", ""
}

// addSpawn records a spawn to create and counts it against the caps.
func (pl *planner) addSpawn(n *fsm.Node, it fsm.InstanceType, reason string, demand ...string) {
	pl.plan.spawns = append(pl.plan.spawns, &fsm.Spawn{
		ID: newRequestID(), NodeID: n.ID, Pool: n.Pool, InstanceType: it, Reason: reason, Demand: demand,
	})
	c := pl.counts[n.Pool]
	c.Spawning++
	pl.counts[n.Pool] = c
	pl.global.Spawning++
}

// fillWarm provisions what the pool's warm pool and minNodes floor lack,
// with its first instance type, as far as the caps allow.
func (pl *planner) fillWarm(p *fsm.Pool) {
	if len(p.InstanceTypes) == 0 || pl.problem(p) != "" {
		return
	}
	idle := pl.idleCount(p.Name)
	for len(pl.plan.spawns) < maxSpawnsPerPass {
		c := pl.counts[p.Name]
		reason := ""
		switch {
		case c.Total() < p.MinNodes:
			reason = fsm.SpawnForMinNodes
		case idle < p.Warm:
			reason = fsm.SpawnForWarm
		default:
			return
		}
		n := virtualNode(newSpawnNodeID(p.Name), p.Name, p.InstanceTypes[0])
		if stage, _ := pl.capped([]*fsm.Node{n}); stage != "" {
			return
		}
		pl.extras = append(pl.extras, n)
		pl.addSpawn(n, p.InstanceTypes[0], reason)
		idle++
	}
}

// idleCount counts the pool's nodes, ready or coming, that nothing placed
// or simulated uses.
func (pl *planner) idleCount(pool string) int {
	idle := 0
	for _, n := range newElasticView(pl.st, pl.pending, pl.extras).Nodes(pool) {
		if n.Placeable() && !pl.plan.used[n.ID] && pl.st.NodeIdle(n.ID) {
			idle++
		}
	}
	return idle
}

func sortedPoolNames(pools map[string]*fsm.Pool) []string {
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// newRequestID is a provisioner request id: random, so two leaders never
// pick the same one for different nodes.
func newRequestID() string { return randomHex(8) }

// newSpawnNodeID names a node to provision: the pool (shortened to fit the
// node id pattern) and a random suffix.
func newSpawnNodeID(pool string) string {
	if len(pool) > 50 {
		pool = pool[:50]
	}
	return pool + "-" + randomHex(4)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
