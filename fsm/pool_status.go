package fsm

import "slices"

// Node states of a pool's status: what an operator of an elastic pool
// watches (amserver pool status).
const (
	PoolNodeReady       = "ready"       // placeable, with work on it
	PoolNodeIdle        = "idle"        // placeable, nothing placed on it
	PoolNodeSpawning    = "spawning"    // asked of the provisioner, not registered yet
	PoolNodeDraining    = "draining"    // cordoned, draining or being given back
	PoolNodeUnavailable = "unavailable" // registered but not ready (unknown, suspect, down, left)
)

// PoolNodeStatus is one node of a pool's status.
type PoolNodeStatus struct {
	NodeID       string
	State        string
	Status       string // the node's own status; empty while spawning
	InstanceType string // provisioned nodes only
	RequestID    string // provisioned nodes only
	Since        int64  `unit:"instant"` // spawning: create time; idle: idle since; draining: delete time
}

// PoolStatus groups a pool's nodes and spawns by state.
type PoolStatus struct {
	Pool        *Pool
	Nodes       []PoolNodeStatus // sorted by node id
	Counts      map[string]int
	Count       PoolCount
	Provisioned PoolCount // cluster-wide provisioned nodes
}

// PoolStatus returns the status of a pool, or nil when it does not exist.
func (s *State) PoolStatus(name string) *PoolStatus {
	p := s.Pool(name)
	if p == nil {
		return nil
	}
	out := &PoolStatus{Pool: p, Counts: map[string]int{}, Count: s.CountPool(name), Provisioned: s.CountProvisioned()}
	for _, state := range []string{PoolNodeReady, PoolNodeIdle, PoolNodeSpawning, PoolNodeDraining, PoolNodeUnavailable} {
		out.Counts[state] = 0
	}
	seen := map[string]bool{}
	for _, n := range s.Nodes(name) {
		seen[n.ID] = true
		ns := PoolNodeStatus{NodeID: n.ID, Status: n.Status, State: s.nodeState(n)}
		if sp := s.SpawnByNode(n.ID); sp != nil {
			ns.InstanceType, ns.RequestID = sp.InstanceType.Name, sp.ID
			switch {
			case sp.State == SpawnDeleting:
				ns.State, ns.Since = PoolNodeDraining, sp.DeleteTime
			case ns.State == PoolNodeIdle:
				ns.Since = sp.IdleSince
			}
		}
		out.Nodes = append(out.Nodes, ns)
	}
	for _, sp := range s.Spawns(name) {
		if seen[sp.NodeID] {
			continue
		}
		ns := PoolNodeStatus{NodeID: sp.NodeID, State: PoolNodeSpawning, InstanceType: sp.InstanceType.Name,
			RequestID: sp.ID, Since: sp.CreateTime}
		if sp.State == SpawnDeleting {
			ns.State, ns.Since = PoolNodeDraining, sp.DeleteTime
		}
		out.Nodes = append(out.Nodes, ns)
	}
	slices.SortFunc(out.Nodes, func(a, b PoolNodeStatus) int {
		switch {
		case a.NodeID < b.NodeID:
			return -1
		case a.NodeID > b.NodeID:
			return 1
		}
		return 0
	})
	for _, n := range out.Nodes {
		out.Counts[n.State]++
	}
	return out
}

func (s *State) nodeState(n *Node) string {
	switch {
	case n.Cordoned || n.Draining:
		return PoolNodeDraining
	case n.Status != NodeReady:
		return PoolNodeUnavailable
	case s.NodeIdle(n.ID):
		return PoolNodeIdle
	}
	return PoolNodeReady
}
