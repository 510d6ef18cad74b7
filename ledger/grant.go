package ledger

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
)

// String renders the key as "bundle:replica:job".
func (k Key) String() string {
	return k.Bundle + ":" + strconv.Itoa(k.Replica) + ":" + k.Job
}

// Compare orders keys by bundle, then replica, then job; every listing and
// commit in the package uses this order so that replicas agree.
func (k Key) Compare(o Key) int {
	if c := cmp.Compare(k.Bundle, o.Bundle); c != 0 {
		return c
	}
	if c := cmp.Compare(k.Replica, o.Replica); c != 0 {
		return c
	}
	return cmp.Compare(k.Job, o.Job)
}

// GrantEqual reports whether a and b hold the same resources. It ignores the
// order of cores, exclusive GPUs and capabilities and treats nil and empty
// slices alike, so a grant that went through a JSON or msgpack round trip
// (or was listed in another order) still counts as the same grant for the
// idempotent Reserve.
func GrantEqual(a, b Grant) bool {
	if a.Capacity != b.Capacity || a.MemoryMiB != b.MemoryMiB {
		return false
	}
	if (a.GPU == nil) != (b.GPU == nil) || (a.GPU != nil && *a.GPU != *b.GPU) {
		return false
	}
	return sameInts(a.Cores, b.Cores) &&
		sameInts(a.ExclusiveGPUs, b.ExclusiveGPUs) &&
		sameCaps(a.Capabilities, b.Capabilities)
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.IsSorted(a) && slices.IsSorted(b) {
		return slices.Equal(a, b)
	}
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func sameCaps(a, b []CapabilityCount) bool {
	if len(a) != len(b) {
		return false
	}
	byName := func(x, y CapabilityCount) int {
		if c := cmp.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return cmp.Compare(x.Count, y.Count)
	}
	a = slices.SortedFunc(slices.Values(a), byName)
	b = slices.SortedFunc(slices.Values(b), byName)
	return slices.Equal(a, b)
}

// Clone returns a deep copy of g, so a stored grant never aliases a caller's
// slices.
func (g Grant) Clone() Grant {
	out := Grant{
		Capacity:      g.Capacity,
		MemoryMiB:     g.MemoryMiB,
		Cores:         slices.Clone(g.Cores),
		ExclusiveGPUs: slices.Clone(g.ExclusiveGPUs),
		Capabilities:  slices.Clone(g.Capabilities),
	}
	if g.GPU != nil {
		s := *g.GPU
		out.GPU = &s
	}
	return out
}

// Clone returns a deep copy of r.
func (r Reservation) Clone() Reservation {
	r.Grant = r.Grant.Clone()
	return r
}

// Clone returns a deep copy of inv.
func (inv Inventory) Clone() Inventory {
	out := inv
	out.GPUs = slices.Clone(inv.GPUs)
	out.Capabilities = slices.Clone(inv.Capabilities)
	for i := range out.Capabilities {
		out.Capabilities[i].Attributes = maps.Clone(inv.Capabilities[i].Attributes)
	}
	return out
}
