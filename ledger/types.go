// Package ledger is amserver's resource accounting: what a node offers, what a
// job asks for, what concrete resources a reservation holds, and the rules that
// keep every node and pool within its limits. It is pure and deterministic so
// that every Raft replica computes bit-identical results.
//
// All quantities are integers in milli-units (capacity 2.5 is 2500); a
// unit:"milli" tag says so to the API edge, which converts them
// (internal/convert), and api:"Name" names a wire field named otherwise.
package ledger

// GPU is one device on a node.
type GPU struct {
	Index    int    `json:"index"`
	Model    string `json:"model"`
	Capacity int64  `json:"capacity" unit:"milli" api:"TotalCapacity"`
}

// Capability is a counted, exclusive resource a node offers (a NIC, a licence).
// Names are unique per node.
type Capability struct {
	Name       string            `json:"name"`
	Count      int64             `json:"count"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Inventory is what a node offers to reservations.
type Inventory struct {
	Allocatable int64 `json:"allocatable"` // totalCapacity × utilizationCap, milli-units
	TotalCores  int   `json:"totalCores"`
	// TotalMemoryMiB is what memory requests may add up to; a node that
	// does not say (0) takes no job that asks for memory.
	TotalMemoryMiB int64        `json:"totalMemoryMiB,omitempty"`
	GPUs           []GPU        `json:"gpus,omitempty"`
	Capabilities   []Capability `json:"capabilities,omitempty"`
}

// CapabilityRequest asks for Count units of a capability whose attributes
// include every AttributeMatches pair.
type CapabilityRequest struct {
	Name             string            `json:"name" row:"1,intern"`
	Count            int64             `json:"count" row:"2"`
	AttributeMatches map[string]string `json:"attributeMatches,omitempty" row:"3"`
}

// Request is what one job needs on one node.
type Request struct {
	Capacity      int64               `json:"capacity" unit:"milli" row:"1"`
	Cores         int                 `json:"cores" row:"2"` // pinned cores
	GPUCapacity   int64               `json:"gpuCapacity" unit:"milli" row:"3"`
	GPUModel      string              `json:"gpuModel,omitempty" row:"4,intern"`
	ExclusiveGPUs int                 `json:"exclusiveGpus" row:"5"`
	Capabilities  []CapabilityRequest `json:"capabilities,omitempty" row:"6"`
	// MemoryMiB is reserved on the node (the ledger's memory dimension);
	// MemoryLimitMiB is what the worker's driver enforces, and is never
	// reserved: a job may burst above its request up to its limit.
	MemoryMiB      int64 `json:"memoryMiB,omitempty" row:"7"`
	MemoryLimitMiB int64 `json:"memoryLimitMiB,omitempty" row:"8"`
}

// GPUShare is a fractional share of one device.
type GPUShare struct {
	Index    int   `json:"index" row:"1"`
	Capacity int64 `json:"capacity" unit:"milli" row:"2"`
}

// CapabilityCount is a held amount of a capability.
type CapabilityCount struct {
	Name  string `json:"name" row:"1,intern"`
	Count int64  `json:"count" row:"2"`
}

// Grant is the concrete set of resources a reservation holds on its node.
type Grant struct {
	Capacity      int64             `json:"capacity" unit:"milli" row:"1"`
	Cores         []int             `json:"cores,omitempty" row:"2"`
	GPU           *GPUShare         `json:"gpu,omitempty" row:"3"`
	ExclusiveGPUs []int             `json:"exclusiveGpus,omitempty" row:"4"`
	Capabilities  []CapabilityCount `json:"capabilities,omitempty" row:"5"`
	MemoryMiB     int64             `json:"memoryMiB,omitempty" row:"6"`
}

// Key identifies a reservation: one per (bundle, replica, job).
type Key struct {
	Bundle  string `json:"bundle"`
	Replica int    `json:"replica"`
	Job     string `json:"job"`
}

// Reservation is a grant held by one job on one node, accounted to a pool.
type Reservation struct {
	Key   Key    `json:"key"`
	Node  string `json:"node"`
	Pool  string `json:"pool"`
	Grant Grant  `json:"grant"`
}

// PoolCaps are aggregate reservation ceilings for a pool; zero means none.
type PoolCaps struct {
	MaxCapacity int64 `json:"maxCapacity" unit:"milli"`
	MaxCores    int   `json:"maxCores"`
	// MaxMemoryMiB bounds the memory requests the pool's reservations hold.
	MaxMemoryMiB int64 `json:"maxMemoryMiB,omitempty"`
}

// PoolUsage is what a pool's reservations hold in total.
type PoolUsage struct {
	Capacity  int64 `json:"capacity" unit:"milli"`
	Cores     int   `json:"cores"`
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}
