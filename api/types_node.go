package api

import "time"

// Node statuses.
const (
	NodeReady   = "ready"
	NodeSuspect = "suspect"
	NodeDown    = "down"
	NodeLeft    = "left"
	NodeUnknown = "unknown"
)

// GPU is one device of a node or instance type.
type GPU struct {
	Index         int     `json:"index"`
	Model         string  `json:"model,omitempty"`
	TotalCapacity float64 `json:"totalCapacity"`
}

// Capability is a counted, exclusive resource a node offers (a NIC, a licence).
type Capability struct {
	Name       string            `json:"name"`
	Count      int64             `json:"count"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// CapabilityCount is a held amount of a capability.
type CapabilityCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// NodeSpec is a node's inventory: the body of PUT /v1/nodes/{id}. ID may be
// omitted (the path names the node); when present it must match the path.
type NodeSpec struct {
	ID     string            `json:"id,omitempty"`
	Pool   string            `json:"pool"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []string          `json:"taints,omitempty"`
	// TotalCapacity is in compute units normalised to a reference workload.
	TotalCapacity float64 `json:"totalCapacity"`
	// UtilizationCap is in (0, 1]; 0 (or omitted) means 1.
	UtilizationCap float64      `json:"utilizationCap,omitempty"`
	TotalCores     int          `json:"totalCores"`
	GPUs           []GPU        `json:"gpus,omitempty"`
	Capabilities   []Capability `json:"capabilities,omitempty"`
	// Runtimes are what the node can run (exec, wasm, docker, compose,
	// ...); a worker detects its own unless told with --runtime.
	Runtimes []string `json:"runtimes,omitempty"`
	// Kind is "" or "proxmox" (the only fit for pve-vm and pve-ct).
	Kind string `json:"kind,omitempty"`
	// TotalMemoryMiB is what memory requests placed here may add up to; a
	// worker reads it from /proc/meminfo unless --memory-mib sets it. 0: the
	// node takes no job that requests memory.
	TotalMemoryMiB int64 `json:"totalMemoryMiB,omitempty"`
}

// GPUReserved is what reservations hold of one device.
type GPUReserved struct {
	Index     int     `json:"index"`
	Capacity  float64 `json:"capacity"`
	Exclusive bool    `json:"exclusive"`
}

// Reserved is what a node's reservations hold.
type Reserved struct {
	Capacity     float64           `json:"capacity"`
	MemoryMiB    int64             `json:"memoryMiB"`
	Cores        int               `json:"cores"`
	CoreSet      []int             `json:"coreSet"`
	GPUs         []GPUReserved     `json:"gpus"`
	Capabilities []CapabilityCount `json:"capabilities"`
}

// Node is a registered node: its inventory plus read-only, computed status.
type Node struct {
	NodeSpec

	Status   string `json:"status"`
	Cordoned bool   `json:"cordoned"`
	Draining bool   `json:"draining"`
	// LastSeen comes from the serving server's gossip view; zero when the
	// node is not a gossip member there.
	LastSeen time.Time `json:"lastSeen,omitzero"`
	// Tier is the pool tier the node's cloud label selects; "" when the pool
	// has no tiers (or none matches).
	Tier string `json:"tier,omitempty"`
	// OutsideTiers: the pool has tiers and the node's cloud is in none of
	// them, so placement passes the node by (DESIGN §2.2).
	OutsideTiers bool    `json:"outsideTiers,omitempty"`
	Allocatable  float64 `json:"allocatable"`
	// AllocatableMemoryMiB is totalMemoryMiB: memory has no utilisation cap.
	AllocatableMemoryMiB int64    `json:"allocatableMemoryMiB"`
	Reserved             Reserved `json:"reserved"`
	// Assignments counts the assignments the node's worker must run.
	Assignments int    `json:"assignments"`
	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// NodeFilter narrows GET /v1/nodes.
type NodeFilter struct {
	Pool   string
	Status string
}

// Pool kinds and scoring policies.
const (
	PoolCluster    = "cluster"
	PoolElastic    = "elastic"
	ScoringBinpack = "binpack"
	ScoringSpread  = "spread"
)

// Tier is one step of a pool's cost cascade.
type Tier struct {
	Name  string `json:"name"`
	Cloud string `json:"cloud"`
}

// PoolCaps are aggregate reservation ceilings; 0 means none.
type PoolCaps struct {
	MaxCapacity  float64 `json:"maxCapacity"`
	MaxCores     int     `json:"maxCores"`
	MaxMemoryMiB int64   `json:"maxMemoryMiB,omitempty"`
}

// PoolDefaults are layered into jobs that omit capacity, cores or memory.
type PoolDefaults struct {
	Capacity  float64 `json:"capacity"`
	Cores     int     `json:"cores"`
	MemoryMiB int64   `json:"memoryMiB,omitempty"`
}

// InstanceType is a node profile an elastic pool can provision.
type InstanceType struct {
	Name          string       `json:"name"`
	TotalCapacity float64      `json:"totalCapacity"`
	TotalCores    int          `json:"totalCores"`
	GPUs          []GPU        `json:"gpus,omitempty"`
	Capabilities  []Capability `json:"capabilities,omitempty"`
	// Runtimes and Kind are what the nodes of this type will advertise
	// (NodeSpec's); placement and validation plan with them.
	Runtimes []string `json:"runtimes,omitempty"`
	Kind     string   `json:"kind,omitempty"`
	// TotalMemoryMiB is what the nodes of this type will register.
	TotalMemoryMiB int64 `json:"totalMemoryMiB,omitempty"`
	// Labels and Taints are what a node of this type registers with (the
	// provisioner passes them to the worker, and the server adds them when
	// the node registers): the demand planner provisions a type only for
	// bundles whose constraints hold on its labels and which tolerate
	// every one of its taints.
	Labels map[string]string `json:"labels,omitempty"`
	Taints []string          `json:"taints,omitempty"`
}

// Provisioner says how an elastic pool obtains nodes: a URL or a command.
type Provisioner struct {
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
}

// PoolUsage is what a pool's reservations hold in total.
type PoolUsage struct {
	Capacity  float64 `json:"capacity"`
	Cores     int     `json:"cores"`
	MemoryMiB int64   `json:"memoryMiB,omitempty"`
}

// Pool is the body of PUT /v1/pools/{name} and of pool reads. Usage,
// CreateIndex and ModifyIndex are read-only: ignored on PUT, so a pool read
// back can be edited and put again.
type Pool struct {
	Name    string   `json:"name,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Tiers   []Tier   `json:"tiers,omitempty"`
	Scoring string   `json:"scoring,omitempty"`
	Caps    PoolCaps `json:"caps"`
	// CapGroup joins a cap group (PUT /v1/caps): the pool's reservations
	// also count against the group's caps.
	CapGroup      string         `json:"capGroup,omitempty"`
	Defaults      PoolDefaults   `json:"defaults"`
	InstanceTypes []InstanceType `json:"instanceTypes,omitempty"`
	Provisioner   *Provisioner   `json:"provisioner,omitempty"`
	MinNodes      int            `json:"minNodes,omitempty"`
	MaxNodes      int            `json:"maxNodes,omitempty"`
	Warm          int            `json:"warm,omitempty"`
	// IdleTimeout and SpawnTimeout are Go durations ("10m").
	IdleTimeout  string `json:"idleTimeout,omitempty"`
	SpawnTimeout string `json:"spawnTimeout,omitempty"`

	Usage       PoolUsage `json:"usage"`
	CreateIndex uint64    `json:"createIndex,omitempty"`
	ModifyIndex uint64    `json:"modifyIndex,omitempty"`
}

// CapabilityRequest asks for Count units of a capability whose attributes
// include every AttributeMatches pair.
type CapabilityRequest struct {
	Name             string            `json:"name"`
	Count            int64             `json:"count"`
	AttributeMatches map[string]string `json:"attributeMatches,omitempty"`
}

// NodeService is a per-node service (DESIGN §2.5): eager on every node it
// may run on, or lazy, on the nodes where a bundle consumes what it
// provides. CreateIndex and ModifyIndex are read-only and ignored on PUT.
type NodeService struct {
	ID       string              `json:"id,omitempty"`
	Pools    []string            `json:"pools"`
	Consumes []CapabilityRequest `json:"consumes,omitempty"`
	Provides []Capability        `json:"provides,omitempty"`
	// Requirements are charged in the ledger on every node the service
	// runs on, as a job's are.
	Requirements ServiceRequirements `json:"requirements,omitzero"`
	// Constraints are CEL expressions over the node (as a job's): the
	// service runs only on nodes where all hold.
	Constraints []string `json:"constraints,omitempty"`
	Lifecycle   string   `json:"lifecycle,omitempty"`
	Launch      Launch   `json:"launch"`
	CreateIndex uint64   `json:"createIndex,omitempty"`
	ModifyIndex uint64   `json:"modifyIndex,omitempty"`
}

// Node service lifecycles (NodeService.Lifecycle).
const (
	ServiceLifecycleEager = "eager"
	ServiceLifecycleLazy  = "lazy"
)

// ServiceRequirements is what a node service reserves on each node it runs
// on: capacity (API units), pinned cores and memory.
type ServiceRequirements struct {
	Capacity  float64 `json:"capacity,omitempty"`
	Cores     int     `json:"cores,omitempty"`
	MemoryMiB int64   `json:"memoryMiB,omitempty"`
}

// Node states of a pool's status (PoolNodeStatus.State).
const (
	LifecycleReady       = "ready"
	LifecycleIdle        = "idle"
	LifecycleSpawning    = "spawning"
	LifecycleDraining    = "draining"
	LifecycleUnavailable = "unavailable"
)

// PoolNodeStatus is one node of a pool's status: a registered node, or one
// an elastic pool's provisioner was asked for.
type PoolNodeStatus struct {
	NodeID string `json:"nodeId"`
	// State is ready (placeable, with work), idle (placeable, empty),
	// spawning (asked of the provisioner, not registered yet), draining
	// (cordoned, draining or being given back) or unavailable.
	State string `json:"state"`
	// Status is the node's own status; empty while spawning.
	Status string `json:"status,omitempty"`
	// InstanceType and RequestID are set on provisioned nodes.
	InstanceType string `json:"instanceType,omitempty"`
	RequestID    string `json:"requestId,omitempty"`
	// Since is when a spawning node was asked for, an idle node became
	// idle, or a node being given back started to be.
	Since time.Time `json:"since,omitzero"`
}

// PoolStatus answers GET /v1/pools/{name}/status.
type PoolStatus struct {
	Pool     string `json:"pool"`
	Kind     string `json:"kind"`
	MinNodes int    `json:"minNodes"`
	MaxNodes int    `json:"maxNodes"`
	Warm     int    `json:"warm"`
	// Counts has every state, zero included.
	Counts map[string]int   `json:"counts"`
	Nodes  []PoolNodeStatus `json:"nodes"`
	// Provisioned counts provisioned nodes across every elastic pool, the
	// number the cluster's cap applies to.
	Provisioned int `json:"provisioned"`
}
