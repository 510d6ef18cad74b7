package ledger

// GPUUse is what reservations hold of one device.
type GPUUse struct {
	Index     int   `json:"index"`
	Capacity  int64 `json:"capacity" unit:"milli"` // reserved share capacity; 0 for an exclusive hold
	Exclusive bool  `json:"exclusive"`             // held whole by one reservation
	Shares    int   `json:"shares" api:"-"`        // number of fractional users
}

func (g GPUUse) idle() bool { return g.Capacity == 0 && !g.Exclusive && g.Shares == 0 }

// Usage is what a node's reservations hold.
//
// Values are immutable: Add and Sub build new slices and never alias the
// receiver's, so a Usage read from a store (or a store snapshot) can be kept
// while the store moves on. Slices are kept canonical (sorted, no idle
// entries, nil when empty) so Add followed by Sub of the same grant gives a
// reflect.DeepEqual result.
type Usage struct {
	Capacity     int64             `json:"capacity"`
	MemoryMiB    int64             `json:"memoryMiB,omitempty"`
	Cores        CoreSet           `json:"cores,omitempty"`
	GPUs         []GPUUse          `json:"gpus,omitempty"`         // sorted by Index, only devices with use
	Capabilities []CapabilityCount `json:"capabilities,omitempty"` // sorted by Name, only non-zero
	Reservations int               `json:"reservations"`
}

// Add returns u plus grant g. It does not check anything; call Check first.
func (u Usage) Add(g Grant) Usage {
	return Usage{
		Capacity:     u.Capacity + g.Capacity,
		MemoryMiB:    u.MemoryMiB + g.MemoryMiB,
		Cores:        u.Cores.With(g.Cores...),
		GPUs:         updateGPUs(u.GPUs, g, true),
		Capabilities: updateCaps(u.Capabilities, g.Capabilities, true),
		Reservations: u.Reservations + 1,
	}
}

// Sub returns u minus grant g. Amounts are clamped at zero so that releasing
// against an inconsistent usage can never produce negative holdings.
func (u Usage) Sub(g Grant) Usage {
	return Usage{
		Capacity:     max(u.Capacity-g.Capacity, 0),
		MemoryMiB:    max(u.MemoryMiB-g.MemoryMiB, 0),
		Cores:        u.Cores.Without(g.Cores...),
		GPUs:         updateGPUs(u.GPUs, g, false),
		Capabilities: updateCaps(u.Capabilities, g.Capabilities, false),
		Reservations: max(u.Reservations-1, 0),
	}
}

// GPU returns the use of device index; the zero use (with Index set) if idle.
func (u Usage) GPU(index int) GPUUse {
	for _, d := range u.GPUs {
		if d.Index == index {
			return d
		}
	}
	return GPUUse{Index: index}
}

// Capability returns the reserved count of capability name.
func (u Usage) Capability(name string) int64 {
	for _, c := range u.Capabilities {
		if c.Name == name {
			return c.Count
		}
	}
	return 0
}

func updateGPUs(gpus []GPUUse, g Grant, add bool) []GPUUse {
	out := make([]GPUUse, len(gpus), len(gpus)+1+len(g.ExclusiveGPUs))
	copy(out, gpus)
	if s := g.GPU; s != nil {
		var i int
		out, i = gpuSlot(out, s.Index)
		if add {
			out[i].Capacity += s.Capacity
			out[i].Shares++
		} else {
			out[i].Capacity = max(out[i].Capacity-s.Capacity, 0)
			out[i].Shares = max(out[i].Shares-1, 0)
		}
	}
	for _, idx := range g.ExclusiveGPUs {
		var i int
		out, i = gpuSlot(out, idx)
		out[i].Exclusive = add
	}
	kept := out[:0]
	for _, d := range out {
		if !d.idle() {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// gpuSlot finds or inserts (keeping Index order) the entry for device idx.
func gpuSlot(gpus []GPUUse, idx int) ([]GPUUse, int) {
	i := 0
	for i < len(gpus) && gpus[i].Index < idx {
		i++
	}
	if i < len(gpus) && gpus[i].Index == idx {
		return gpus, i
	}
	gpus = append(gpus, GPUUse{})
	copy(gpus[i+1:], gpus[i:])
	gpus[i] = GPUUse{Index: idx}
	return gpus, i
}

func updateCaps(caps, delta []CapabilityCount, add bool) []CapabilityCount {
	out := make([]CapabilityCount, len(caps), len(caps)+len(delta))
	copy(out, caps)
	for _, d := range delta {
		i := 0
		for i < len(out) && out[i].Name < d.Name {
			i++
		}
		if i == len(out) || out[i].Name != d.Name {
			out = append(out, CapabilityCount{})
			copy(out[i+1:], out[i:])
			out[i] = CapabilityCount{Name: d.Name}
		}
		if add {
			out[i].Count += d.Count
		} else {
			out[i].Count = max(out[i].Count-d.Count, 0)
		}
	}
	kept := out[:0]
	for _, c := range out {
		if c.Count != 0 {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// Add returns p plus grant g.
func (p PoolUsage) Add(g Grant) PoolUsage {
	return PoolUsage{Capacity: p.Capacity + g.Capacity, Cores: p.Cores + len(g.Cores), MemoryMiB: p.MemoryMiB + g.MemoryMiB}
}

// Sub returns p minus grant g, clamped at zero like Usage.Sub.
func (p PoolUsage) Sub(g Grant) PoolUsage {
	return PoolUsage{
		Capacity:  max(p.Capacity-g.Capacity, 0),
		Cores:     max(p.Cores-len(g.Cores), 0),
		MemoryMiB: max(p.MemoryMiB-g.MemoryMiB, 0),
	}
}
