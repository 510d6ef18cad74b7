package httpapi

import (
	"maps"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
	"github.com/amserver/amserver/ledger"
)

var (
	// A registration is the inventory; status and indexes are the cluster's.
	nodeSpecPair = convert.MustPair[api.NodeSpec, fsm.Node](
		convert.Skip("Status", "Cordoned", "Draining", "CreateIndex", "ModifyIndex"))
	// A read computes these from the state, the pool and the gossip view.
	nodePair = convert.MustPair[api.Node, fsm.Node](
		convert.Skip("Capabilities", "Cordoned", "LastSeen", "Tier", "OutsideTiers", "Allocatable", "AllocatableMemoryMiB", "Reserved", "Assignments"))
	gpuUsePair = convert.MustPair[api.GPUReserved, ledger.GPUUse]()
)

// nodeFromAPI converts a registration; id comes from the path.
func nodeFromAPI(id string, in api.NodeSpec) (fsm.Node, error) {
	var n fsm.Node
	problems := nodeSpecPair.ToFSM(&n, &in)
	n.ID = id
	if n.UtilizationCap == 0 {
		n.UtilizationCap = 1000 // omitted: the whole node (DESIGN §2.1)
	}
	return n, invalid(problems)
}

// nodeView is what a node's API form needs beyond the node itself.
type nodeView struct {
	st       *fsm.State
	lastSeen map[string]time.Time // gossip view, by member name
}

func (v nodeView) node(n *fsm.Node) api.Node {
	var out api.Node
	nodePair.ToAPI(&out, n)
	// Capabilities include those running node services provide.
	out.Capabilities = capabilitiesToAPI(n.Inventory().Capabilities)
	// Drain is cordon plus moving jobs away (DESIGN §4): a draining node
	// takes no new work, so it reads as cordoned too.
	out.Cordoned = n.Cordoned || n.Draining
	out.LastSeen = v.lastSeen[n.ID]
	out.Tier, out.OutsideTiers = tierOf(n, v.st.Pool(n.Pool))
	out.Allocatable = convert.FromMilli(n.Allocatable())
	out.AllocatableMemoryMiB = n.TotalMemoryMiB
	out.Reserved = reservedToAPI(n.Usage)
	for _, a := range v.st.NodeAssignments(n.ID) {
		if a.Desired == fsm.DesiredRun {
			out.Assignments++
		}
	}
	return out
}

// capabilitiesToAPI copies a merged capability list; ledger's type is the
// wire type's twin (ledger may not import api), so a conversion is a copy.
func capabilitiesToAPI(in []ledger.Capability) []api.Capability {
	if len(in) == 0 {
		return nil
	}
	out := make([]api.Capability, len(in))
	for i, c := range in {
		out[i] = api.Capability(c)
		out[i].Attributes = maps.Clone(c.Attributes)
	}
	return out
}

// tierOf is the first tier whose cloud is the node's cloud (DESIGN §2.2),
// and whether the pool has tiers and none takes the node: placement then
// passes it by (scheduler: the pool and tier stage).
func tierOf(n *fsm.Node, p *fsm.Pool) (name string, outside bool) {
	if p == nil {
		return "", false
	}
	for _, t := range p.Tiers {
		if t.Cloud == n.Cloud() {
			return t.Name, false
		}
	}
	return "", len(p.Tiers) > 0
}

// reservedToAPI summarizes a node's usage; the lists are never null.
func reservedToAPI(u ledger.Usage) api.Reserved {
	out := api.Reserved{
		Capacity: convert.FromMilli(u.Capacity), MemoryMiB: u.MemoryMiB, Cores: u.Cores.Count(), CoreSet: u.Cores.Slice(),
		GPUs: make([]api.GPUReserved, len(u.GPUs)), Capabilities: make([]api.CapabilityCount, len(u.Capabilities)),
	}
	if out.CoreSet == nil {
		out.CoreSet = []int{}
	}
	for i := range u.GPUs {
		gpuUsePair.ToAPI(&out.GPUs[i], &u.GPUs[i])
	}
	for i, c := range u.Capabilities {
		out.Capabilities[i] = api.CapabilityCount(c)
	}
	return out
}
