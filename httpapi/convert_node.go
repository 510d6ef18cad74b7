package httpapi

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// nodeFromAPI converts a registration; id comes from the path.
func nodeFromAPI(id string, in api.NodeSpec) (fsm.Node, error) {
	var cv converter
	n := fsm.Node{
		ID: id, Pool: in.Pool, Labels: in.Labels, Taints: in.Taints,
		TotalCapacity:  cv.milli("totalCapacity", in.TotalCapacity),
		UtilizationCap: cv.milli("utilizationCap", in.UtilizationCap),
		TotalCores:     in.TotalCores,
		GPUs:           gpusFromAPI(&cv, "gpus", in.GPUs),
		Capabilities:   capabilitiesFromAPI(in.Capabilities),
	}
	if n.UtilizationCap == 0 {
		n.UtilizationCap = 1000 // omitted: the whole node (DESIGN §2.1)
	}
	return n, cv.err()
}

func gpusFromAPI(cv *converter, field string, in []api.GPU) []ledger.GPU {
	if len(in) == 0 {
		return nil
	}
	out := make([]ledger.GPU, len(in))
	for i, g := range in {
		out[i] = ledger.GPU{Index: g.Index, Model: g.Model,
			Capacity: cv.milli(fmt.Sprintf("%s[%d].totalCapacity", field, i), g.TotalCapacity)}
	}
	return out
}

func gpusToAPI(in []ledger.GPU) []api.GPU {
	if len(in) == 0 {
		return nil
	}
	out := make([]api.GPU, len(in))
	for i, g := range in {
		out[i] = api.GPU{Index: g.Index, Model: g.Model, TotalCapacity: fromMilli(g.Capacity)}
	}
	return out
}

func capabilitiesFromAPI(in []api.Capability) []ledger.Capability {
	if len(in) == 0 {
		return nil
	}
	out := make([]ledger.Capability, len(in))
	for i, c := range in {
		out[i] = ledger.Capability{Name: c.Name, Count: c.Count, Attributes: maps.Clone(c.Attributes)}
	}
	return out
}

func capabilitiesToAPI(in []ledger.Capability) []api.Capability {
	if len(in) == 0 {
		return nil
	}
	out := make([]api.Capability, len(in))
	for i, c := range in {
		out[i] = api.Capability{Name: c.Name, Count: c.Count, Attributes: maps.Clone(c.Attributes)}
	}
	return out
}

// nodeView is what a node's API form needs beyond the node itself.
type nodeView struct {
	st       *fsm.State
	lastSeen map[string]time.Time // gossip view, by member name
}

func (v nodeView) node(n *fsm.Node) api.Node {
	out := api.Node{
		NodeSpec: api.NodeSpec{
			ID: n.ID, Pool: n.Pool, Labels: maps.Clone(n.Labels), Taints: slices.Clone(n.Taints),
			TotalCapacity: fromMilli(n.TotalCapacity), UtilizationCap: fromMilli(n.UtilizationCap),
			TotalCores: n.TotalCores, GPUs: gpusToAPI(n.GPUs), Capabilities: capabilitiesToAPI(n.Inventory().Capabilities),
		},
		Status: n.Status,
		// Drain is cordon plus moving jobs away (DESIGN §4): a draining node
		// takes no new work, so it reads as cordoned too.
		Cordoned: n.Cordoned || n.Draining, Draining: n.Draining,
		LastSeen:    v.lastSeen[n.ID],
		Tier:        tierOf(n, v.st.Pool(n.Pool)),
		Allocatable: fromMilli(n.Allocatable()),
		Reserved:    reservedToAPI(n.Usage),
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
	for _, a := range v.st.NodeAssignments(n.ID) {
		if a.Desired == fsm.DesiredRun {
			out.Assignments++
		}
	}
	return out
}

// tierOf is the first tier whose cloud is the node's cloud (DESIGN §2.2).
func tierOf(n *fsm.Node, p *fsm.Pool) string {
	if p == nil {
		return ""
	}
	for _, t := range p.Tiers {
		if t.Cloud == n.Cloud() {
			return t.Name
		}
	}
	return ""
}

func reservedToAPI(u ledger.Usage) api.Reserved {
	out := api.Reserved{
		Capacity: fromMilli(u.Capacity), Cores: u.Cores.Count(), CoreSet: u.Cores.Slice(),
		GPUs: make([]api.GPUReserved, len(u.GPUs)), Capabilities: make([]api.CapabilityCount, len(u.Capabilities)),
	}
	if out.CoreSet == nil {
		out.CoreSet = []int{}
	}
	for i, g := range u.GPUs {
		out.GPUs[i] = api.GPUReserved{Index: g.Index, Capacity: fromMilli(g.Capacity), Exclusive: g.Exclusive}
	}
	for i, c := range u.Capabilities {
		out.Capabilities[i] = api.CapabilityCount{Name: c.Name, Count: c.Count}
	}
	return out
}
