package ledger

import "slices"

// Check reports whether grant g can be added to used on a node with
// inventory inv without breaking a node invariant of DESIGN §2.4. Malformed
// grants give an ErrInvalidGrant-wrapping error; otherwise the first
// exhausted dimension, in Fit's order (capabilities in grant order, gpu,
// cores, capacity, memory), is returned as an *ExhaustedError.
func Check(inv Inventory, used Usage, g Grant) error {
	if err := validateGrant(inv, g); err != nil {
		return err
	}
	for _, c := range g.Capabilities {
		have, _ := findCapability(inv, c.Name)
		if free := have.Count - used.Capability(c.Name); c.Count > free {
			return exhausted(DimCapabilityPrefix+c.Name, "need %d, %d free of %d", c.Count, free, have.Count)
		}
	}
	if s := g.GPU; s != nil {
		dev, _ := findGPU(inv, s.Index)
		u := used.GPU(s.Index)
		if u.Exclusive {
			return exhausted(DimGPU, "gpu %d is held exclusively", s.Index)
		}
		if free := dev.Capacity - u.Capacity; s.Capacity > free {
			return exhausted(DimGPU, "gpu %d: need %dm, %dm free of %dm", s.Index, s.Capacity, free, dev.Capacity)
		}
	}
	for _, idx := range g.ExclusiveGPUs {
		if !used.GPU(idx).idle() {
			return exhausted(DimGPU, "gpu %d is in use and cannot be held exclusively", idx)
		}
	}
	for _, c := range g.Cores {
		if used.Cores.Has(c) {
			return exhausted(DimCores, "core %d is already pinned", c)
		}
	}
	if free := inv.Allocatable - used.Capacity; g.Capacity > free {
		return exhausted(DimCapacity, "need %dm, %dm free of %dm", g.Capacity, free, inv.Allocatable)
	}
	if free := inv.TotalMemoryMiB - used.MemoryMiB; g.MemoryMiB > free {
		return exhausted(DimMemory, "need %d MiB, %d MiB free of %d MiB", g.MemoryMiB, free, inv.TotalMemoryMiB)
	}
	return nil
}

// validateGrant rejects grants that name resources the node does not have or
// that are malformed in themselves; those are bugs, not placement outcomes.
func validateGrant(inv Inventory, g Grant) error {
	if g.Capacity < 0 {
		return invalid("negative capacity %d", g.Capacity)
	}
	if g.MemoryMiB < 0 {
		return invalid("negative memory %d MiB", g.MemoryMiB)
	}
	for _, c := range g.Cores {
		if c < 0 || c >= inv.TotalCores {
			return invalid("core %d out of range [0,%d)", c, inv.TotalCores)
		}
	}
	if hasDuplicate(g.Cores) {
		return invalid("duplicate cores in %v", g.Cores)
	}
	if g.GPU != nil && len(g.ExclusiveGPUs) > 0 {
		return invalid("grant has both a GPU share and exclusive GPUs")
	}
	if s := g.GPU; s != nil {
		if _, ok := findGPU(inv, s.Index); !ok {
			return invalid("node has no gpu %d", s.Index)
		}
		if s.Capacity <= 0 {
			return invalid("gpu share capacity %d is not positive", s.Capacity)
		}
	}
	for _, idx := range g.ExclusiveGPUs {
		if _, ok := findGPU(inv, idx); !ok {
			return invalid("node has no gpu %d", idx)
		}
	}
	if hasDuplicate(g.ExclusiveGPUs) {
		return invalid("duplicate exclusive gpus in %v", g.ExclusiveGPUs)
	}
	for i, c := range g.Capabilities {
		if _, ok := findCapability(inv, c.Name); !ok {
			return invalid("node has no capability %q", c.Name)
		}
		// A held capability must hold something; zero entries would make
		// equal holdings compare unequal.
		if c.Count <= 0 {
			return invalid("capability %q count %d is not positive", c.Name, c.Count)
		}
		for _, d := range g.Capabilities[:i] {
			if d.Name == c.Name {
				return invalid("duplicate capability %q", c.Name)
			}
		}
	}
	return nil
}

func hasDuplicate(xs []int) bool {
	if len(xs) < 2 {
		return false
	}
	s := xs
	if !slices.IsSorted(s) { // Fit's grants are sorted: no copy on the hot path
		s = slices.Sorted(slices.Values(xs))
	}
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return true
		}
	}
	return false
}

// findGPU returns the first device with the index; inventories are expected
// to have unique indices, and taking the first keeps lookups deterministic
// even when they do not.
func findGPU(inv Inventory, idx int) (GPU, bool) {
	for _, d := range inv.GPUs {
		if d.Index == idx {
			return d, true
		}
	}
	return GPU{}, false
}

func findCapability(inv Inventory, name string) (Capability, bool) {
	for _, c := range inv.Capabilities {
		if c.Name == name {
			return c, true
		}
	}
	return Capability{}, false
}

// CheckPool reports whether adding g keeps a pool within its caps (a cap of
// zero or less means none).
func CheckPool(caps PoolCaps, used PoolUsage, g Grant) error {
	if caps.MaxCapacity > 0 && g.Capacity > caps.MaxCapacity-used.Capacity {
		return exhausted(DimPoolCaps, "capacity: need %dm, %dm free of cap %dm",
			g.Capacity, caps.MaxCapacity-used.Capacity, caps.MaxCapacity)
	}
	if caps.MaxCores > 0 && len(g.Cores) > caps.MaxCores-used.Cores {
		return exhausted(DimPoolCaps, "cores: need %d, %d free of cap %d",
			len(g.Cores), caps.MaxCores-used.Cores, caps.MaxCores)
	}
	if caps.MaxMemoryMiB > 0 && g.MemoryMiB > caps.MaxMemoryMiB-used.MemoryMiB {
		return exhausted(DimPoolCaps, "memory: need %d MiB, %d MiB free of cap %d MiB",
			g.MemoryMiB, caps.MaxMemoryMiB-used.MemoryMiB, caps.MaxMemoryMiB)
	}
	return nil
}

// Fits reports whether inventory inv covers usage used on every dimension.
// The FSM uses it to refuse an inventory update that would leave a node
// holding more than it has.
func Fits(inv Inventory, used Usage) error {
	for _, c := range used.Capabilities {
		have, _ := findCapability(inv, c.Name)
		if c.Count > have.Count {
			return exhausted(DimCapabilityPrefix+c.Name, "%d reserved, node has %d", c.Count, have.Count)
		}
	}
	for _, u := range used.GPUs {
		dev, ok := findGPU(inv, u.Index)
		switch {
		case !ok:
			return exhausted(DimGPU, "gpu %d is reserved but the node no longer has it", u.Index)
		case u.Capacity > dev.Capacity:
			return exhausted(DimGPU, "gpu %d: %dm reserved, capacity %dm", u.Index, u.Capacity, dev.Capacity)
		case u.Exclusive && (u.Shares > 0 || u.Capacity > 0):
			return exhausted(DimGPU, "gpu %d is exclusive but also shared", u.Index)
		}
	}
	if top := used.Cores.highest(); top >= inv.TotalCores {
		return exhausted(DimCores, "core %d is pinned, node has %d cores", top, inv.TotalCores)
	}
	if used.Capacity > inv.Allocatable {
		return exhausted(DimCapacity, "%dm reserved, allocatable %dm", used.Capacity, inv.Allocatable)
	}
	if used.MemoryMiB > inv.TotalMemoryMiB {
		return exhausted(DimMemory, "%d MiB reserved, node has %d MiB", used.MemoryMiB, inv.TotalMemoryMiB)
	}
	return nil
}
