package httpapi

import (
	"maps"
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// A list's entries are summaries (DESIGN §7): what a table of a hundred
// thousand bundles shows, a tenth of the bytes of the whole objects.

func bundleSummary(b *fsm.Bundle) api.BundleSummary {
	var out api.BundleSummary
	bundleSummaryInto(&out, b)
	return out
}

// bundleSummaryInto renders b's summary into out, overwriting all of it
// but reusing its lists and maps: a list page renders each of its
// bundles into one value it encodes at once.
func bundleSummaryInto(out *api.BundleSummary, b *fsm.Bundle) {
	reps, degs := out.Replicas, out.Degradations
	*out = api.BundleSummary{
		ID: b.Spec.ID, Pool: b.Spec.Pool, Priority: b.Spec.Priority, Kind: b.Spec.KindName(),
		EffectivePriority: b.Spec.EffectivePriority(), State: b.State, Epoch: b.Epoch,
		Jobs: len(b.Spec.Jobs), WantReplicas: b.Spec.Replicas(),
		Replicas:     resized(reps, len(b.Replicas)),
		Degradations: resized(degs, len(b.Degradations)),
		Explained:    b.Explain != nil,
		CreateIndex:  b.CreateIndex, ModifyIndex: b.ModifyIndex,
	}
	for i, r := range b.Replicas {
		rs := &out.Replicas[i]
		rs.Role, rs.State, rs.Nodes = r.Role, r.State, rs.Nodes[:0]
		if rs.Nodes == nil {
			rs.Nodes = []string{}
		}
		if rs.Statuses == nil {
			rs.Statuses = map[string]int{}
		}
		clear(rs.Statuses)
		for _, j := range r.Jobs {
			status := j.Status
			if !j.Placed() {
				status = api.JobUnplaced
			}
			rs.Statuses[status]++
			if j.NodeID != "" && !slices.Contains(rs.Nodes, j.NodeID) {
				rs.Nodes = append(rs.Nodes, j.NodeID)
			}
		}
	}
	for i, d := range b.Degradations {
		out.Degradations[i] = d.Code
	}
}

// resized is s holding n elements, never nil, reusing its array when it
// is long enough; the elements kept from before are the caller's to
// overwrite.
func resized[E any](s []E, n int) []E {
	if s == nil || cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}

// summary is a node's list entry, from its whole API form (which the view
// has built anyway when a filter asked for it).
func nodeSummary(n *api.Node) api.NodeSummary {
	out := api.NodeSummary{
		ID: n.ID, Pool: n.Pool, Status: n.Status, Cordoned: n.Cordoned, Draining: n.Draining,
		Labels: maps.Clone(n.Labels), Tier: n.Tier, OutsideTiers: n.OutsideTiers,
		Allocatable: n.Allocatable, ReservedCapacity: n.Reserved.Capacity,
		TotalCores: n.TotalCores, ReservedCores: n.Reserved.Cores,
		TotalMemoryMiB: n.TotalMemoryMiB, ReservedMemoryMiB: n.Reserved.MemoryMiB,
		Assignments: n.Assignments, LastSeen: n.LastSeen,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
	total := make(map[int]float64, len(n.GPUs))
	for _, g := range n.GPUs {
		out.GPUCapacity += g.TotalCapacity
		total[g.Index] = g.TotalCapacity
	}
	for _, g := range n.Reserved.GPUs {
		// An exclusive hold books no share (its capacity reads 0) but
		// takes the whole device: counted as shares, a node whose GPUs
		// are all held read as idle in node list.
		if g.Exclusive {
			out.ReservedGPU += total[g.Index]
			continue
		}
		out.ReservedGPU += g.Capacity
	}
	return out
}
