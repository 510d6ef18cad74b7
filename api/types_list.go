package api

import "time"

// List paging (DESIGN §7): every list answers at most PerPage entries in id
// order; the X-Amserver-NextToken header names the next page and is absent
// on the last.
const (
	DefaultPerPage = 100
	MaxPerPage     = 1000
)

// ListOptions narrow and page a list. The zero value is the first page of
// DefaultPerPage entries of everything.
type ListOptions struct {
	// Prefix keeps the entries whose id starts with it.
	Prefix string
	// Filter is a CEL expression over the entry's API form, bound as
	// bundle, node, pool, service or token: `bundle.state == "placed"`,
	// `node.labels["az"] == "az-1"`. It is applied before paging.
	Filter string
	// PerPage is the page size (server default 100, at most 1,000).
	PerPage int
	// NextToken resumes a walk where the previous page ended.
	NextToken string
}

// PageMeta describes one page of a list.
type PageMeta struct {
	QueryMeta
	// NextToken names the next page; "" on the last.
	NextToken string
}

// BundleSummary is a bundle's entry in GET /v1/bundles: enough to list it
// and see its health. GET /v1/bundles/{id} (or ?full=true) has the rest.
type BundleSummary struct {
	ID       string `json:"id"`
	Pool     string `json:"pool"`
	Priority string `json:"priority"`
	// EffectivePriority is the highest of Priority and the jobs' own.
	EffectivePriority string `json:"effectivePriority"`
	Kind              string `json:"kind"`
	State             string `json:"state"`
	Epoch             uint64 `json:"epoch"`
	// Jobs is how many jobs the bundle has; WantReplicas is a service's
	// count, 2 with a backup (resilience), else 1.
	Jobs         int              `json:"jobs"`
	WantReplicas int              `json:"wantReplicas"`
	Replicas     []ReplicaSummary `json:"replicas"`
	// Degradations are the codes of the relaxed rules.
	Degradations []string `json:"degradations"`
	// Explained says the bundle carries an explanation of what stays
	// unplaced (read the bundle for it).
	Explained   bool   `json:"explained"`
	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// ReplicaSummary is one replica of a BundleSummary.
type ReplicaSummary struct {
	Role  string `json:"role"`
	State string `json:"state"`
	// Nodes are the distinct nodes its jobs are on, in job order.
	Nodes []string `json:"nodes"`
	// Statuses counts its jobs by status; an unplaced job counts as
	// "unplaced".
	Statuses map[string]int `json:"statuses"`
}

// JobUnplaced is the ReplicaSummary.Statuses key of jobs without a node.
const JobUnplaced = "unplaced"

// NodeSummary is a node's entry in GET /v1/nodes; GET /v1/nodes/{id} (or
// ?full=true) has its inventory, reservations and the rest.
type NodeSummary struct {
	ID       string            `json:"id"`
	Pool     string            `json:"pool"`
	Status   string            `json:"status"`
	Cordoned bool              `json:"cordoned"`
	Draining bool              `json:"draining"`
	Labels   map[string]string `json:"labels,omitempty"`
	Tier     string            `json:"tier,omitempty"`
	// OutsideTiers is Node.OutsideTiers: placement passes the node by.
	OutsideTiers bool `json:"outsideTiers,omitempty"`
	// Capacity in API units: allocatable and reserved.
	Allocatable      float64 `json:"allocatable"`
	ReservedCapacity float64 `json:"reservedCapacity"`
	TotalCores       int     `json:"totalCores"`
	ReservedCores    int     `json:"reservedCores"`
	// Memory in MiB: the node's total and what requests hold of it.
	TotalMemoryMiB    int64 `json:"totalMemoryMiB"`
	ReservedMemoryMiB int64 `json:"reservedMemoryMiB"`
	// GPUCapacity sums the devices' capacity, ReservedGPU what is held of it
	// (shares, and an exclusively held device whole).
	GPUCapacity float64   `json:"gpuCapacity"`
	ReservedGPU float64   `json:"reservedGpu"`
	Assignments int       `json:"assignments"`
	LastSeen    time.Time `json:"lastSeen,omitzero"`
	CreateIndex uint64    `json:"createIndex"`
	ModifyIndex uint64    `json:"modifyIndex"`
}
