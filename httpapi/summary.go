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
	out := api.BundleSummary{
		ID: b.Spec.ID, Pool: b.Spec.Pool, Priority: b.Spec.Priority, Kind: b.Spec.KindName(),
		EffectivePriority: b.Spec.EffectivePriority(), State: b.State, Epoch: b.Epoch,
		Jobs: len(b.Spec.Jobs), WantReplicas: b.Spec.Replicas(),
		Replicas:     make([]api.ReplicaSummary, len(b.Replicas)),
		Degradations: make([]string, len(b.Degradations)),
		Explained:    b.Explain != nil,
		CreateIndex:  b.CreateIndex, ModifyIndex: b.ModifyIndex,
	}
	for i, r := range b.Replicas {
		rs := api.ReplicaSummary{Role: r.Role, State: r.State, Nodes: []string{}, Statuses: map[string]int{}}
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
		out.Replicas[i] = rs
	}
	for i, d := range b.Degradations {
		out.Degradations[i] = d.Code
	}
	return out
}

// summary is a node's list entry, from its whole API form (which the view
// has built anyway when a filter asked for it).
func nodeSummary(n *api.Node) api.NodeSummary {
	out := api.NodeSummary{
		ID: n.ID, Pool: n.Pool, Status: n.Status, Cordoned: n.Cordoned, Draining: n.Draining,
		Labels: maps.Clone(n.Labels), Tier: n.Tier,
		Allocatable: n.Allocatable, ReservedCapacity: n.Reserved.Capacity,
		TotalCores: n.TotalCores, ReservedCores: n.Reserved.Cores,
		TotalMemoryMiB: n.TotalMemoryMiB, ReservedMemoryMiB: n.Reserved.MemoryMiB,
		Assignments: n.Assignments, LastSeen: n.LastSeen,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
	for _, g := range n.GPUs {
		out.GPUCapacity += g.TotalCapacity
	}
	for _, g := range n.Reserved.GPUs {
		out.ReservedGPU += g.Capacity
	}
	return out
}
