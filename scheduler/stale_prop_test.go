package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestPropStalePlanRecheck: a plan computed by the real scheduler on a
// snapshot S0, sometimes with a placement moved to another node (as a
// plan of an overlapping leader, or a buggy one, might have it: this is
// what reaches the intra-replica rules, which changes of the state alone
// cannot break), is applied after random changes that may invalidate its parts
// (nodes re-registered smaller, memory included, with new taints, labels, capability
// attributes or GPU models; cordoned, drained, down or suspect; other
// bundles placed; pool caps lowered). The FSM must commit exactly the parts
// an independent oracle says still fit the new state, reject the others
// whole, and keep the ledger invariants.
func TestPropStalePlanRecheck(t *testing.T) {
	var parts, rejected int
	for range staleRounds {
		rapid.Check(t, func(t *rapid.T) {
			c, p, want, pr := staleCase(t)
			if !slices.Equal(want, pr.Committed) {
				t.Fatalf("oracle commits parts %v, the FSM %v (rejected %+v)", want, pr.Committed, pr.Rejected)
			}
			checkInvariants(t, c.state())
			parts, rejected = parts+len(p.Parts), rejected+len(pr.Rejected)
		})
	}
	t.Logf("%d plan parts judged, %d rejected as stale", parts, rejected)
}

// staleRounds multiplies rapid's checks (100 by default): a missing rule
// shows within a few hundred cases, and 1,000 take about a second.
const staleRounds = 10

// staleCase draws a world, computes a plan on it, moves some placements,
// changes the state, and applies the plan. It returns the cluster, the
// plan, the parts the oracle commits and the FSM's result.
func staleCase(t *rapid.T) (*cluster, *fsm.Plan, []int, *fsm.PlanResult) {
	c, pending := genStaleWorld(t)
	plan := NewEngine(Options{}).Snapshot(c.state()).NewBatch(rapid.Uint64().Draw(t, "seed"))
	plan.PlaceAll(pending)
	p := plan.Plan(1)
	for range rapid.IntRange(0, 2).Draw(t, "moves") {
		moveOne(t, p, c.state().Nodes("p"))
	}
	for i := range rapid.IntRange(0, 5).Draw(t, "changes") {
		genChange(t, c, i)
	}
	want := newStaleOracle(c.state()).judge(p)
	pr := c.ok(fsm.ApplyPlanType, p).Value.(*fsm.PlanResult)
	return c, p, want, pr
}

// genStaleWorld is a random cluster (genWorldN's nodes and existing
// bundles) with one to three pending bundles.
func genStaleWorld(t *rapid.T) (*cluster, []*fsm.Bundle) {
	w := genWorldN(t, 2, 6)
	pending := []*fsm.Bundle{w.bundle}
	for i := range rapid.IntRange(0, 2).Draw(t, "more") {
		pending = append(pending, w.c.bundle(genSpec(t, w.c, fmt.Sprintf("b%d", i+1))))
	}
	return w.c, pending
}

// genChange applies one random change that may invalidate a stale plan.
// Changes the FSM refuses (a node shrunk below what it holds) change
// nothing, like any refused command.
func genChange(t *rapid.T, c *cluster, i int) {
	st := c.state()
	nodes := st.Nodes("p")
	n := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "changeNode")]
	switch rapid.IntRange(0, 8).Draw(t, "change") {
	case 0:
		reregister(c, shrink(t, registration(n)))
	case 1:
		reg := registration(n)
		reg.Taints = append(reg.Taints, rapid.SampledFrom([]string{"special", "other"}).Draw(t, "taint"))
		reregister(c, reg)
	case 2:
		reregister(c, relabel(t, registration(n)))
	case 3:
		reregister(c, remodel(t, registration(n)))
	case 4:
		c.apply(fsm.NodeCordonType, &fsm.NodeFlagRequest{NodeID: n.ID, On: true})
	case 5:
		c.apply(fsm.NodeDrainType, &fsm.NodeFlagRequest{NodeID: n.ID, On: true})
	case 6:
		status := rapid.SampledFrom([]string{fsm.NodeDown, fsm.NodeSuspect, fsm.NodeLeft}).Draw(t, "status")
		c.apply(fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: n.ID, Status: status})
	case 7:
		placeOther(t, c, fmt.Sprintf("o%d", i))
	default:
		lowerCaps(t, c)
	}
}

// registration is what a worker would send to re-register the node.
func registration(n *fsm.Node) fsm.Node {
	return fsm.Node{
		ID: n.ID, Pool: n.Pool, Labels: maps.Clone(n.Labels), Taints: slices.Clone(n.Taints),
		TotalCapacity: n.TotalCapacity, UtilizationCap: n.UtilizationCap, TotalCores: n.TotalCores, TotalMemoryMiB: n.TotalMemoryMiB,
		GPUs: slices.Clone(n.GPUs), Capabilities: slices.Clone(n.Capabilities),
	}
}

func reregister(c *cluster, n fsm.Node) {
	c.apply(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: n})
}

func shrink(t *rapid.T, n fsm.Node) fsm.Node {
	n.TotalCapacity = max(1000, n.TotalCapacity-int64(rapid.IntRange(0, 8).Draw(t, "lessCap"))*1000)
	n.TotalCores = max(0, n.TotalCores-rapid.IntRange(0, 4).Draw(t, "lessCores"))
	n.TotalMemoryMiB = max(0, n.TotalMemoryMiB-int64(rapid.IntRange(0, 8).Draw(t, "lessMem"))*1024)
	n.UtilizationCap = rapid.SampledFrom([]int64{n.UtilizationCap, 500}).Draw(t, "util")
	if len(n.Capabilities) > 0 {
		n.Capabilities[0].Count = max(0, n.Capabilities[0].Count-1)
	}
	return n
}

func relabel(t *rapid.T, n fsm.Node) fsm.Node {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["az"] = rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "newAz")
	n.Labels["cloud"] = rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, "newCloud")
	if f := rapid.SampledFrom([]string{"", "fast", "slow"}).Draw(t, "newFeatures"); f != "" {
		n.Labels["features"] = f
	} else {
		delete(n.Labels, "features")
	}
	return n
}

// remodel changes what a capability or GPU is, not how many there are.
func remodel(t *rapid.T, n fsm.Node) fsm.Node {
	for i := range n.Capabilities {
		n.Capabilities[i].Attributes = map[string]string{"speed": rapid.SampledFrom([]string{"10g", "25g"}).Draw(t, "newSpeed")}
	}
	for i := range n.GPUs {
		n.GPUs[i].Model = rapid.SampledFrom([]string{"t4", "a100"}).Draw(t, "newModel")
	}
	return n
}

// lowerCaps lowers the pool's caps towards what it holds (the FSM refuses
// caps below usage).
func lowerCaps(t *rapid.T, c *cluster) {
	p := *c.state().Pool("p")
	room := int64(rapid.IntRange(0, 6).Draw(t, "capRoom")) * 500
	p.Caps = ledger.PoolCaps{MaxCapacity: p.Usage.Capacity + room, MaxCores: p.Usage.Cores + rapid.IntRange(0, 3).Draw(t, "coreRoom"),
		MaxMemoryMiB: p.Usage.MemoryMiB + int64(rapid.IntRange(0, 4).Draw(t, "memRoom"))*512}
	if p.Caps.MaxCapacity == 0 {
		p.Caps.MaxCapacity = 1 // zero means no cap
	}
	if p.Caps.MaxCores == 0 {
		p.Caps.MaxCores = 1
	}
	if p.Caps.MaxMemoryMiB == 0 {
		p.Caps.MaxMemoryMiB = 1
	}
	c.apply(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
}

// placeOther places another one-job bundle with the scheduler on the
// current state; its plan must commit whole.
func placeOther(t *rapid.T, c *cluster, id string) {
	j := genJob(t, id, "a")
	b := c.bundle(validSpec(c, fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{j}}))
	batch := NewEngine(Options{}).Snapshot(c.state()).NewBatch(0)
	batch.Place(b)
	c.commit(batch.Plan(1))
}

// moveOne moves one placement of the plan to another node, grant and all.
func moveOne(t *rapid.T, p *fsm.Plan, nodes []*fsm.Node) {
	var places []*fsm.Place
	for i := range p.Parts {
		for k := range p.Parts[i].Updates {
			for m := range p.Parts[i].Updates[k].Place {
				places = append(places, &p.Parts[i].Updates[k].Place[m])
			}
		}
	}
	if len(places) == 0 {
		return
	}
	pl := places[rapid.IntRange(0, len(places)-1).Draw(t, "movePlace")]
	pl.Node = nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "moveTo")].ID
}
