package scheduler

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/amserver/amserver/ledger"
)

// The resource stages check what the node would hold with the group added
// to whatever this replica already put there (c.dem), in ledger.Fit's
// dimension order. They only count; grants are built once, for the chosen
// node, by fitNode, which agrees with them dimension by dimension.

// capabilityFilter: the node has every capability the jobs ask for, with
// matching attributes and enough free count.
type capabilityFilter struct{}

func (capabilityFilter) Name() string { return ledger.DimCapabilityPrefix + "*" }

func (capabilityFilter) Filter(c *cycle) bool {
	for i := range c.dem.caps {
		need := &c.dem.caps[i]
		have, ok := findCapability(c.n.inv.Capabilities, need.name)
		if !ok {
			if c.explain {
				c.detail = fmt.Sprintf("node has no capability %q", need.name)
			}
			return c.fail(need.key, 0)
		}
		for _, want := range need.attrs {
			if k, bad := attributeMismatch(have.Attributes, want); bad {
				if c.explain {
					c.detail = fmt.Sprintf("attribute %s=%q does not match %q", k, want[k], have.Attributes[k])
				}
				return c.fail(need.key, 0)
			}
		}
		if free := have.Count - c.used.Capability(need.name); need.count > free {
			if c.explain {
				c.detail = fmt.Sprintf("need %d %s, %d free of %d", need.count, need.name, free, have.Count)
			}
			return c.fail(need.key, c.hostMask())
		}
	}
	return true
}

func findCapability(caps []ledger.Capability, name string) (ledger.Capability, bool) {
	for _, c := range caps {
		if c.Name == name {
			return c, true
		}
	}
	return ledger.Capability{}, false
}

// gpuFilter: the GPU shares and exclusive devices fit on the node's devices
// together (model match, capacity per device, exclusivity).
type gpuFilter struct{}

func (gpuFilter) Name() string { return StageGPU }

func (gpuFilter) Filter(c *cycle) bool {
	if c.s.gpu.fits(c.n.inv, c.used, c.dem.gpus) {
		return true
	}
	if c.explain {
		if _, err := fitGPUs(c.n.inv, c.used, c.dem.gpus); err != nil {
			c.detail = ledgerDetail(err)
		}
	}
	return c.fail(StageGPU, c.hostMask())
}

// ledgerDetail is an exhausted dimension's detail, or the whole error for a
// malformed request.
func ledgerDetail(err error) string {
	var ex *ledger.ExhaustedError
	if errors.As(err, &ex) {
		return ex.Detail
	}
	return err.Error()
}

// coresFilter: enough unpinned cores.
type coresFilter struct{}

func (coresFilter) Name() string { return StageCores }

func (coresFilter) Filter(c *cycle) bool {
	free := c.n.inv.TotalCores - c.used.Cores.Count()
	if c.dem.cores <= free {
		return true
	}
	if c.explain {
		c.detail = fmt.Sprintf("need %d cores, %d free of %d", c.dem.cores, free, c.n.inv.TotalCores)
	}
	return c.fail(StageCores, c.hostMask())
}

// capacityFilter: enough unreserved allocatable capacity.
type capacityFilter struct{}

func (capacityFilter) Name() string { return StageCapacity }

func (capacityFilter) Filter(c *cycle) bool {
	free := c.n.inv.Allocatable - c.used.Capacity
	if c.dem.capacity <= free {
		return true
	}
	if c.explain {
		c.detail = fmt.Sprintf("need %s capacity, %s free of %s", units(c.dem.capacity), units(free), units(c.n.inv.Allocatable))
	}
	return c.fail(StageCapacity, c.hostMask())
}

// memoryFilter: enough unreserved memory. A node that registered no
// memory (0) takes no job that requests some.
type memoryFilter struct{}

func (memoryFilter) Name() string { return StageMemory }

func (memoryFilter) Filter(c *cycle) bool {
	free := c.n.inv.TotalMemoryMiB - c.used.MemoryMiB
	if c.dem.memory <= free {
		return true
	}
	if c.explain {
		c.detail = fmt.Sprintf("insufficient memory: need %d MiB, %d MiB free of %d MiB", c.dem.memory, free, c.n.inv.TotalMemoryMiB)
	}
	return c.fail(StageMemory, c.hostMask())
}

// poolCapsFilter: the pool's aggregate caps, and the cluster's and its cap
// group's (scopeCapsFail), hold with the whole replica's reservations so
// far plus the group's.
type poolCapsFilter struct{}

func (poolCapsFilter) Name() string { return StagePoolCaps }

func (poolCapsFilter) Filter(c *cycle) bool {
	s := c.s
	caps, used := s.poolCaps, s.poolUsed
	capacity := used.Capacity + s.sumCapacity + c.g.dem.capacity
	cores := used.Cores + s.sumCores + c.g.dem.cores
	memory := used.MemoryMiB + s.sumMemory + c.g.dem.memory
	switch {
	case caps.MaxCapacity > 0 && capacity > caps.MaxCapacity:
		if c.explain {
			c.detail = fmt.Sprintf("pool %s capacity cap: need %s, %s free of %s", s.t.pool.name,
				units(c.g.dem.capacity), units(caps.MaxCapacity-used.Capacity-s.sumCapacity), units(caps.MaxCapacity))
		}
	case caps.MaxCores > 0 && cores > caps.MaxCores:
		if c.explain {
			c.detail = fmt.Sprintf("pool %s cores cap: need %d, %d free of %d", s.t.pool.name,
				c.g.dem.cores, caps.MaxCores-used.Cores-s.sumCores, caps.MaxCores)
		}
	case caps.MaxMemoryMiB > 0 && memory > caps.MaxMemoryMiB:
		if c.explain {
			c.detail = fmt.Sprintf("pool %s memory cap: need %d MiB, %d MiB free of %d MiB", s.t.pool.name,
				c.g.dem.memory, caps.MaxMemoryMiB-used.MemoryMiB-s.sumMemory, caps.MaxMemoryMiB)
		}
	default:
		return scopeCapsFail(c)
	}
	return c.fail(StagePoolCaps, s.assigned)
}

// scopeCaps is a cluster or cap group scope with caps, as the search saw
// it when it started.
type scopeCaps struct {
	name string
	caps ledger.PoolCaps
	used ledger.PoolUsage
}

// cappedScopes lists the scopes above the pool that have caps.
func cappedScopes(store ledger.Store, pool string) []scopeCaps {
	var out []scopeCaps
	for _, sc := range store.PoolScopes(pool) {
		caps, used := store.Pool(sc)
		if caps != (ledger.PoolCaps{}) {
			out = append(out, scopeCaps{name: sc, caps: caps, used: used})
		}
	}
	return out
}

// scopeCapsFail checks the cluster's and the pool's cap group's caps with
// the whole replica's reservations so far plus the group's; the stage is
// clusterCaps or groupCaps, and the detail names the cap.
func scopeCapsFail(c *cycle) bool {
	s := c.s
	needCapacity, needCores := s.sumCapacity+c.g.dem.capacity, s.sumCores+c.g.dem.cores
	needMemory := s.sumMemory + c.g.dem.memory
	for i := range s.scopes {
		sc := &s.scopes[i]
		stage, title := ledger.DimClusterCaps, "cluster"
		if g, ok := ledger.ScopeGroup(sc.name); ok {
			stage, title = ledger.DimGroupCaps, "cap group "+g
		}
		switch {
		case sc.caps.MaxCapacity > 0 && sc.used.Capacity+needCapacity > sc.caps.MaxCapacity:
			if c.explain {
				c.detail = fmt.Sprintf("%s capacity cap: need %s, %s free of %s", title, units(c.g.dem.capacity),
					units(sc.caps.MaxCapacity-sc.used.Capacity-s.sumCapacity), units(sc.caps.MaxCapacity))
			}
		case sc.caps.MaxCores > 0 && sc.used.Cores+needCores > sc.caps.MaxCores:
			if c.explain {
				c.detail = fmt.Sprintf("%s cores cap: need %d, %d free of %d", title, c.g.dem.cores,
					sc.caps.MaxCores-sc.used.Cores-s.sumCores, sc.caps.MaxCores)
			}
		case sc.caps.MaxMemoryMiB > 0 && sc.used.MemoryMiB+needMemory > sc.caps.MaxMemoryMiB:
			if c.explain {
				c.detail = fmt.Sprintf("%s memory cap: need %d MiB, %d MiB free of %d MiB", title, c.g.dem.memory,
					sc.caps.MaxMemoryMiB-sc.used.MemoryMiB-s.sumMemory, sc.caps.MaxMemoryMiB)
			}
		default:
			continue
		}
		return c.fail(stage, s.assigned)
	}
	return true
}

// units renders milli-units as the API's decimal units.
func units(m int64) string { return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64) }
