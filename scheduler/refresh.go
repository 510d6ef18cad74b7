package scheduler

import (
	"maps"
	"reflect"
	"slices"

	"github.com/amserver/amserver/fsm"
)

// refreshIndex indexes v, reusing prev when it can. Between two snapshots
// of a busy cluster most node rows change only in usage (every committed
// plan rewrites the nodes it touched), which the index does not bucket on;
// then the node array is copied with fresh rows and usage, and every
// candidate list, failure domain and CEL input is shared with prev. Any
// change placement buckets on (a node added, removed, moved, re-labelled,
// re-inventoried, cordoned, a pool's tiers) rebuilds from scratch, so a
// refreshed index always equals a fresh build.
func refreshIndex(prev *index, v View) *index {
	all := v.Nodes("")
	if prev == nil || len(all) != len(prev.nodes) {
		return buildIndex(v, all)
	}
	x := &index{view: v, nodes: slices.Clone(prev.nodes), byID: prev.byID,
		pools: make(map[string]*poolIndex, len(prev.pools)), empty: map[string]*poolIndex{}}
	for name, p := range prev.pools { // order-free: each pool on its own
		cfg := v.Pool(name)
		if !sameTiers(p.cfg, cfg) {
			return buildIndex(v, all)
		}
		cp := *p
		cp.cfg = cfg
		x.pools[name] = &cp
	}
	for i, n := range all {
		info := &x.nodes[i]
		if info.node == n {
			continue
		}
		if !sameStatic(info.node, n) {
			return buildIndex(v, all)
		}
		info.node, info.usage = n, n.Usage
	}
	return x
}

func sameTiers(a, b *fsm.Pool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Tiers, b.Tiers)
}

// sameStatic reports whether two rows of a node agree on everything the
// index and the CEL input are built from (all but usage and bookkeeping).
func sameStatic(a, b *fsm.Node) bool {
	return a.ID == b.ID && a.Pool == b.Pool && a.Status == b.Status &&
		a.Cordoned == b.Cordoned && a.Draining == b.Draining &&
		a.TotalCapacity == b.TotalCapacity && a.UtilizationCap == b.UtilizationCap &&
		a.TotalCores == b.TotalCores && a.TotalMemoryMiB == b.TotalMemoryMiB && maps.Equal(a.Labels, b.Labels) &&
		slices.Equal(a.Runtimes, b.Runtimes) && a.Kind == b.Kind &&
		slices.Equal(a.Taints, b.Taints) && slices.Equal(a.GPUs, b.GPUs) &&
		reflect.DeepEqual(a.Capabilities, b.Capabilities) && reflect.DeepEqual(a.Provided, b.Provided)
}
