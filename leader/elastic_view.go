package leader

import (
	"maps"
	"slices"
	"strings"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// elasticView is the state as it will be once the nodes being provisioned
// arrive: every spawning node is there, ready and empty, and a provisioned
// node that registered but is not yet ready in gossip counts as ready. The
// elastic duty simulates placement on it, so demand a spawn already covers
// is never provisioned twice, by this leader or the next.
type elasticView struct {
	*fsm.State
	extra map[string]*fsm.Node
	all   []*fsm.Node
}

var _ scheduler.View = (*elasticView)(nil)

// newElasticView overlays nodes (virtual ones, or replacements of real ones
// by id) on st.
func newElasticView(st *fsm.State, nodes ...[]*fsm.Node) *elasticView {
	v := &elasticView{State: st, extra: map[string]*fsm.Node{}}
	for _, list := range nodes {
		for _, n := range list {
			v.extra[n.ID] = n
		}
	}
	for _, n := range st.Nodes("") {
		if _, ok := v.extra[n.ID]; !ok {
			v.all = append(v.all, n)
		}
	}
	for _, n := range v.extra {
		v.all = append(v.all, n)
	}
	slices.SortFunc(v.all, func(a, b *fsm.Node) int { return strings.Compare(a.ID, b.ID) })
	return v
}

// Node implements scheduler.View.
func (v *elasticView) Node(id string) *fsm.Node {
	if n, ok := v.extra[id]; ok {
		return n
	}
	return v.State.Node(id)
}

// Nodes implements scheduler.View.
func (v *elasticView) Nodes(pool string) []*fsm.Node {
	if pool == "" {
		return v.all
	}
	var out []*fsm.Node
	for _, n := range v.all {
		if n.Pool == pool {
			out = append(out, n)
		}
	}
	return out
}

// virtualNode is the node an instance type will register as: ready, empty.
func virtualNode(id, pool string, it fsm.InstanceType) *fsm.Node {
	return &fsm.Node{
		ID: id, Pool: pool, TotalCapacity: it.TotalCapacity, UtilizationCap: 1000, TotalCores: it.TotalCores,
		GPUs: it.GPUs, Capabilities: it.Capabilities, Runtimes: it.Runtimes, Kind: it.Kind, Status: fsm.NodeReady,
		TotalMemoryMiB: it.TotalMemoryMiB,
		// The node will register with its type's labels and taints (the
		// FSM adds them), so the simulation gates on them as placement will.
		Labels: maps.Clone(it.Labels), Taints: slices.Clone(it.Taints),
	}
}

// pendingNodes are the nodes spawns will bring: virtual nodes for spawns
// not registered yet, and registered ones not yet seen ready, as ready.
func pendingNodes(st *fsm.State, spawns []*fsm.Spawn) []*fsm.Node {
	var out []*fsm.Node
	for _, sp := range spawns {
		n := st.Node(sp.NodeID)
		switch {
		case sp.State == fsm.SpawnDeleting:
		case n == nil:
			out = append(out, virtualNode(sp.NodeID, sp.Pool, sp.InstanceType))
		case n.Status == fsm.NodeUnknown && !n.Cordoned && !n.Draining:
			cp := *n
			cp.Status = fsm.NodeReady
			out = append(out, &cp)
		}
	}
	return out
}
