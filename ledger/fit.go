package ledger

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
)

// Fit chooses a concrete grant for req on a node with inventory inv and
// current usage used. When the node cannot satisfy req it returns an
// *ExhaustedError naming the first dimension that fails, checked in the
// feasibility order of DESIGN §3.1: capabilities (in request order), gpu,
// cores, capacity, memory. A malformed request gives an ErrInvalidGrant-wrapping
// error.
//
// Every choice is deterministic: the lowest free cores; for a GPU share the
// matching device left with the least free capacity (best fit, ties by lowest
// index); for exclusive GPUs the lowest-index matching idle devices. The
// dimensions are independent, so when Fit fails no other grant would fit.
//
// A capability request with Count 0 still requires a matching capability on
// the node (an attribute constraint) but holds nothing.
func Fit(inv Inventory, used Usage, req Request) (Grant, error) {
	if err := validateRequest(req); err != nil {
		return Grant{}, err
	}
	caps, err := fitCapabilities(inv, used, req.Capabilities)
	if err != nil {
		return Grant{}, err
	}
	g := Grant{Capacity: req.Capacity, MemoryMiB: req.MemoryMiB, Capabilities: caps}
	if req.GPUCapacity > 0 {
		if g.GPU, err = fitShare(inv, used, req.GPUModel, req.GPUCapacity); err != nil {
			return Grant{}, err
		}
	}
	if req.ExclusiveGPUs > 0 {
		if g.ExclusiveGPUs, err = fitExclusive(inv, used, req.GPUModel, req.ExclusiveGPUs); err != nil {
			return Grant{}, err
		}
	}
	if req.Cores > 0 {
		if g.Cores, err = fitCores(inv, used, req.Cores); err != nil {
			return Grant{}, err
		}
	}
	if free := inv.Allocatable - used.Capacity; req.Capacity > free {
		return Grant{}, exhausted(DimCapacity, "need %s, %s free of %s", units(req.Capacity), units(free), units(inv.Allocatable))
	}
	if free := inv.TotalMemoryMiB - used.MemoryMiB; req.MemoryMiB > free {
		return Grant{}, exhausted(DimMemory, "need %d MiB, %d MiB free of %d MiB", req.MemoryMiB, free, inv.TotalMemoryMiB)
	}
	return g, nil
}

func validateRequest(req Request) error {
	switch {
	case req.Capacity < 0:
		return invalid("negative capacity %d", req.Capacity)
	case req.Cores < 0:
		return invalid("negative cores %d", req.Cores)
	case req.MemoryMiB < 0 || req.MemoryLimitMiB < 0:
		return invalid("negative memory %d MiB (limit %d MiB)", req.MemoryMiB, req.MemoryLimitMiB)
	case req.GPUCapacity < 0:
		return invalid("negative gpu capacity %d", req.GPUCapacity)
	case req.ExclusiveGPUs < 0:
		return invalid("negative exclusive gpus %d", req.ExclusiveGPUs)
	case req.GPUCapacity > 0 && req.ExclusiveGPUs > 0:
		return invalid("request asks for both a GPU share and exclusive GPUs")
	}
	for _, c := range req.Capabilities {
		if c.Count < 0 {
			return invalid("capability %q count %d is negative", c.Name, c.Count)
		}
	}
	return nil
}

// fitCapabilities checks each request in order, counting what earlier
// requests for the same name already took, and returns the grant's holdings
// merged by name and sorted (the canonical order Usage uses).
func fitCapabilities(inv Inventory, used Usage, reqs []CapabilityRequest) ([]CapabilityCount, error) {
	var out []CapabilityCount
	for _, r := range reqs {
		dim := DimCapabilityPrefix + r.Name
		have, ok := findCapability(inv, r.Name)
		if !ok {
			return nil, exhausted(dim, "node has no capability %q", r.Name)
		}
		if k, ok := attributeMismatch(have.Attributes, r.AttributeMatches); ok {
			return nil, exhausted(dim, "attribute %s=%q does not match %q", k, r.AttributeMatches[k], have.Attributes[k])
		}
		i := slices.IndexFunc(out, func(c CapabilityCount) bool { return c.Name == r.Name })
		var taken int64
		if i >= 0 {
			taken = out[i].Count
		}
		if free := have.Count - used.Capability(r.Name) - taken; r.Count > free {
			return nil, exhausted(dim, "need %d, %d free of %d", r.Count, free, have.Count)
		}
		switch {
		case r.Count == 0:
		case i >= 0:
			out[i].Count += r.Count
		default:
			out = append(out, CapabilityCount{Name: r.Name, Count: r.Count})
		}
	}
	slices.SortFunc(out, func(a, b CapabilityCount) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// attributeMismatch returns the first (in key order, so the message is
// deterministic) wanted attribute the node does not have with that value.
func attributeMismatch(have, want map[string]string) (string, bool) {
	matches := true
	for k, v := range want { // order-free: only decides whether to look closer
		if hv, ok := have[k]; !ok || hv != v {
			matches = false
			break
		}
	}
	if matches {
		return "", false
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			return k, true
		}
	}
	return "", false
}

func modelMatches(d GPU, model string) bool { return model == "" || d.Model == model }

func fitShare(inv Inventory, used Usage, model string, need int64) (*GPUShare, error) {
	best, bestLeft := -1, int64(0)
	for _, d := range inv.GPUs {
		u := used.GPU(d.Index)
		if !modelMatches(d, model) || u.Exclusive {
			continue
		}
		left := d.Capacity - u.Capacity - need
		if left < 0 {
			continue
		}
		if best < 0 || left < bestLeft || (left == bestLeft && d.Index < best) {
			best, bestLeft = d.Index, left
		}
	}
	if best < 0 {
		return nil, exhausted(DimGPU, "no %s with %s free", gpuWord(model), units(need))
	}
	return &GPUShare{Index: best, Capacity: need}, nil
}

func fitExclusive(inv Inventory, used Usage, model string, n int) ([]int, error) {
	var idle []int
	for _, d := range inv.GPUs {
		if modelMatches(d, model) && used.GPU(d.Index).idle() {
			idle = append(idle, d.Index)
		}
	}
	slices.Sort(idle)
	idle = slices.Compact(idle)
	if len(idle) < n {
		return nil, exhausted(DimGPU, "need %d idle %s, %d idle", n, gpuWord(model), len(idle))
	}
	return idle[:n:n], nil
}

func gpuWord(model string) string {
	if model == "" {
		return "gpu"
	}
	return model + " gpu"
}

func fitCores(inv Inventory, used Usage, n int) ([]int, error) {
	out := make([]int, 0, n)
	for i := 0; i < inv.TotalCores && len(out) < n; i++ {
		if !used.Cores.Has(i) {
			out = append(out, i)
		}
	}
	if len(out) < n {
		return nil, exhausted(DimCores, "need %d, %d free of %d", n, len(out), inv.TotalCores)
	}
	return out, nil
}

// units writes a milli quantity as the API and the CLI show it (0.5, not
// 500m): Fit's details reach explanations that operators read. Check's
// messages keep milli units; the FSM's re-check reports them.
func units(m int64) string { return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64) }
