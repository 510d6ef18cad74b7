package api

// ClusterCaps is the body of PUT /v1/caps and the answer of GET /v1/caps:
// reservation ceilings for the whole cluster, and for named cap groups that
// pools join with their capGroup field (0 = none). Usage, a group's Pools
// and ModifyIndex are read-only: ignored on PUT, so caps read back can be
// edited and put again. A group left out of a PUT has no caps.
type ClusterCaps struct {
	// PoolCaps are the cluster's ceilings, in a pool's caps' fields: a
	// dimension added to pool caps is a cluster and group cap too.
	PoolCaps
	Groups map[string]CapGroup `json:"groups,omitempty"`

	// Usage is what every reservation of the cluster holds.
	Usage       *PoolUsage `json:"usage,omitempty"`
	ModifyIndex uint64     `json:"modifyIndex,omitempty"`
}

// CapGroup is one cap group's ceilings; Usage (what its pools' reservations
// hold) and Pools (the pools that joined it) are read-only.
type CapGroup struct {
	PoolCaps
	Usage *PoolUsage `json:"usage,omitempty"`
	Pools []string   `json:"pools,omitempty"`
}
