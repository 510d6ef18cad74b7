package fsm

import (
	"fmt"
	"time"
)

// Spawn states: a provisioner was asked for the node (spawning), the node
// registered (registered), or the node is being given back (deleting).
const (
	SpawnSpawning   = "spawning"
	SpawnRegistered = "registered"
	SpawnDeleting   = "deleting"
)

// Why a spawn exists: a bundle that did not fit, the pool's warm pool, or
// its minNodes floor.
const (
	SpawnForDemand   = "demand"
	SpawnForWarm     = "warm"
	SpawnForMinNodes = "minNodes"
)

// Elastic pool defaults (DESIGN §2.2).
const (
	DefaultSpawnTimeout = int64(5 * time.Minute)
	DefaultIdleTimeout  = int64(10 * time.Minute)
)

// Explain stages an elastic pool adds when it cannot provision (DESIGN §3.7).
const (
	StagePoolMaxNodes        = "poolMaxNodes"
	StageMaxProvisionedNodes = "maxProvisionedNodes"
	StageProvisioner         = "provisioner"
	StageInstanceType        = "instanceType"
)

// Spawn is a node the leader asked an elastic pool's provisioner for. The
// record is written before the provisioner is called and lives as long as
// the node: it makes a new leader call the provisioner again with the same
// request id rather than provision the same demand twice, and it counts
// against the caps from the moment it exists.
type Spawn struct {
	ID           string       `json:"id"` // the provisioner request id
	NodeID       string       `json:"nodeId"`
	Pool         string       `json:"pool"`
	InstanceType InstanceType `json:"instanceType"` // copied: later pool edits do not change it
	State        string       `json:"state"`
	Reason       string       `json:"reason"`           // demand | warm | minNodes
	Demand       []string     `json:"demand,omitempty"` // bundles it was provisioned for
	CreateTime   int64        `json:"createTime"`       // leader clock, unix nanos
	RegisterTime int64        `json:"registerTime,omitempty"`
	// IdleSince is when the leader last saw the registered node become idle
	// (nothing placed on it); 0 while it is busy.
	IdleSince    int64  `json:"idleSince,omitempty"`
	DeleteTime   int64  `json:"deleteTime,omitempty"`
	DeleteReason string `json:"deleteReason,omitempty"`

	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// SpawnTimeoutOrDefault is the pool's spawnTimeout, or the default.
func (p *Pool) SpawnTimeoutOrDefault() int64 {
	if p == nil || p.SpawnTimeout <= 0 {
		return DefaultSpawnTimeout
	}
	return p.SpawnTimeout
}

// IdleTimeoutOrDefault is the pool's idleTimeout, or the default.
func (p *Pool) IdleTimeoutOrDefault() int64 {
	if p == nil || p.IdleTimeout <= 0 {
		return DefaultIdleTimeout
	}
	return p.IdleTimeout
}

// InstanceTypeNamed returns the named instance type of the pool, or nil.
func (p *Pool) InstanceTypeNamed(name string) *InstanceType {
	for i := range p.InstanceTypes {
		if p.InstanceTypes[i].Name == name {
			return &p.InstanceTypes[i]
		}
	}
	return nil
}

// Spawn returns a spawn by request id, or nil.
func (s *State) Spawn(id string) *Spawn { return first[Spawn](s.txn, tableSpawns, "id", id) }

// SpawnByNode returns the spawn that provisioned a node, or nil.
func (s *State) SpawnByNode(nodeID string) *Spawn {
	return first[Spawn](s.txn, tableSpawns, "node", nodeID)
}

// Spawns returns the spawns of a pool ("" for every pool), sorted by id.
func (s *State) Spawns(pool string) []*Spawn {
	if pool == "" {
		return all[Spawn](s.txn, tableSpawns, "id")
	}
	return all[Spawn](s.txn, tableSpawns, "pool", pool)
}

// NodeIdle reports whether nothing of any bundle sits on the node: no placed
// job and no assignment still to stop. Node services do not count.
func (s *State) NodeIdle(nodeID string) bool {
	if b := first[Bundle](s.txn, tableBundles, "node", nodeID); b != nil {
		return false
	}
	for _, a := range s.NodeAssignments(nodeID) {
		if a.BundleID != "" {
			return false
		}
	}
	return true
}

// PoolCount is what counts against an elastic pool's maxNodes: its nodes
// (except those that left) and its spawns whose node has not registered.
// The other fields split that count by the states pool status names, so
// that an explanation says what the counted nodes are: Ready, Idle,
// Draining and Unavailable add up to Nodes; GivingBack is the part of
// Spawning being given back (pool status shows it draining).
type PoolCount struct {
	Nodes    int
	Spawning int

	Ready, Idle, Draining, Unavailable int
	GivingBack                         int
}

// Total is nodes plus spawning.
func (c PoolCount) Total() int { return c.Nodes + c.Spawning }

// CountPool counts a pool's nodes against maxNodes.
func (s *State) CountPool(pool string) PoolCount {
	var c PoolCount
	for _, n := range s.Nodes(pool) {
		if n.Status == NodeLeft {
			continue
		}
		c.Nodes++
		state := s.nodeState(n)
		if sp := s.SpawnByNode(n.ID); sp != nil && sp.State == SpawnDeleting {
			state = PoolNodeDraining
		}
		switch state {
		case PoolNodeReady:
			c.Ready++
		case PoolNodeIdle:
			c.Idle++
		case PoolNodeDraining:
			c.Draining++
		default:
			c.Unavailable++
		}
	}
	for _, sp := range s.Spawns(pool) {
		n := s.Node(sp.NodeID)
		if n == nil || n.Pool != pool || n.Status == NodeLeft {
			c.Spawning++
			if sp.State == SpawnDeleting {
				c.GivingBack++
			}
		}
	}
	return c
}

// CountProvisioned counts every spawn, across pools, against the cluster's
// cap on provisioned nodes: registered ones and those still spawning (or
// being given back).
func (s *State) CountProvisioned() PoolCount {
	var c PoolCount
	for _, sp := range s.Spawns("") {
		switch sp.State {
		case SpawnRegistered:
			c.Nodes++
		case SpawnDeleting:
			c.Spawning++
			c.GivingBack++
		default:
			c.Spawning++
		}
	}
	return c
}

// PoolCapDetail explains a pool at its maxNodes, for explanations: what it
// counts, by the states of pool status (a down or draining node counts
// against the cap as much as a ready one, and is no help).
func PoolCapDetail(pool string, maxNodes int, c PoolCount) string {
	return fmt.Sprintf("pool %s at maxNodes %d (%d ready, %d idle, %d draining, %d unavailable, %d spawning)", pool, maxNodes,
		c.Ready, c.Idle, c.Draining+c.GivingBack, c.Unavailable, c.Spawning-c.GivingBack)
}

// GlobalCapDetail explains the cluster at its cap on provisioned nodes,
// which counts spawns whatever their node's status.
func GlobalCapDetail(limit int, c PoolCount) string {
	return fmt.Sprintf("cluster at max provisioned nodes %d (%d registered, %d spawning, %d being given back)", limit,
		c.Nodes, c.Spawning-c.GivingBack, c.GivingBack)
}
