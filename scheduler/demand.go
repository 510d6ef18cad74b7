package scheduler

import (
	"cmp"
	"maps"
	"slices"

	"github.com/amserver/amserver/ledger"
)

// demand is what a set of jobs asks of one node, summed so that the
// feasibility stages can check a whole co-location group (plus whatever the
// replica already put on the node) without building grants. Capacity, cores
// and capability counts add up order-free; GPU requests do not (devices are
// bins), so they are kept per job and fitted by fitGPUs.
type demand struct {
	capacity int64
	memory   int64 // MiB
	cores    int
	caps     []capNeed        // merged by name, sorted by name
	gpus     []ledger.Request // GPU part of each GPU-requesting job
}

// capNeed is the summed count of one capability and every attribute match
// any of the requests asks for.
type capNeed struct {
	name  string
	key   string // explain key: "capability:<name>"
	count int64
	attrs []map[string]string
}

func (d *demand) needsGPU() bool { return len(d.gpus) > 0 }

// addRequest adds one job's request.
func (d *demand) addRequest(r ledger.Request) {
	d.capacity += r.Capacity
	d.memory += r.MemoryMiB
	d.cores += r.Cores
	for _, c := range r.Capabilities {
		d.addCap(capNeed{name: c.Name, count: c.Count, attrs: nonEmpty(c.AttributeMatches)})
	}
	if r.GPUCapacity > 0 || r.ExclusiveGPUs > 0 {
		d.gpus = append(d.gpus, ledger.Request{
			GPUCapacity: r.GPUCapacity, GPUModel: r.GPUModel, ExclusiveGPUs: r.ExclusiveGPUs,
		})
	}
}

func nonEmpty(m map[string]string) []map[string]string {
	if len(m) == 0 {
		return nil
	}
	return []map[string]string{m}
}

func (d *demand) addCap(c capNeed) {
	i, found := slices.BinarySearchFunc(d.caps, c.name, func(e capNeed, name string) int { return cmp.Compare(e.name, name) })
	if !found {
		d.caps = slices.Insert(d.caps, i, capNeed{name: c.name, key: ledger.DimCapabilityPrefix + c.name})
	}
	d.caps[i].count += c.count
	d.caps[i].attrs = append(d.caps[i].attrs, c.attrs...)
}

// plus returns d and o summed, sharing nothing with either.
func (d *demand) plus(o *demand) *demand {
	out := &demand{capacity: d.capacity + o.capacity, memory: d.memory + o.memory, cores: d.cores + o.cores}
	for _, c := range d.caps {
		out.addCap(capNeed{name: c.name, count: c.count, attrs: slices.Clone(c.attrs)})
	}
	for _, c := range o.caps {
		out.addCap(c)
	}
	out.gpus = append(slices.Clone(d.gpus), o.gpus...)
	return out
}

// attributeMismatch returns the first wanted attribute, in key order so the
// explanation is deterministic, that the node's capability lacks.
func attributeMismatch(have, want map[string]string) (string, bool) {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			return k, true
		}
	}
	return "", false
}

// maxPermutedGPUJobs bounds the orders fitGPUs tries: GPU shares are bin
// packing, so one order can fail where another fits; up to this many GPU
// jobs on one node every order is tried (5! = 120), beyond it only the
// canonical one.
const maxPermutedGPUJobs = 5

// fitGPUs reports whether the GPU requests fit on a node together, trying
// the canonical hardest-first order and, on failure, every other order. It
// returns the order that fits (indices into reqs) or the canonical order's
// error.
func fitGPUs(inv ledger.Inventory, used ledger.Usage, reqs []ledger.Request) ([]int, error) {
	order := canonicalOrder(reqs)
	err := fitInOrder(inv, used, reqs, order)
	if err == nil || len(reqs) < 2 || len(reqs) > maxPermutedGPUJobs {
		return order, err
	}
	found := []int(nil)
	permute(slices.Clone(order), 0, func(p []int) bool {
		if fitInOrder(inv, used, reqs, p) == nil {
			found = slices.Clone(p)
			return true
		}
		return false
	})
	if found != nil {
		return found, nil
	}
	return order, err
}

// canonicalOrder puts the hardest GPU requests first: exclusive devices,
// then model-bound shares, then larger shares; ties keep job order.
func canonicalOrder(reqs []ledger.Request) []int {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := reqs[a], reqs[b]
		if c := cmp.Compare(rb.ExclusiveGPUs, ra.ExclusiveGPUs); c != 0 {
			return c
		}
		if c := boolCmp(rb.GPUModel != "", ra.GPUModel != ""); c != 0 {
			return c
		}
		return cmp.Compare(rb.GPUCapacity, ra.GPUCapacity)
	})
	return order
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func fitInOrder(inv ledger.Inventory, used ledger.Usage, reqs []ledger.Request, order []int) error {
	for _, i := range order {
		g, err := ledger.Fit(inv, used, reqs[i])
		if err != nil {
			return err
		}
		used = used.Add(g)
	}
	return nil
}

// fitNode computes the grants of reqs placed on one node together, GPU jobs
// in the order fitGPUs found; grants[i] belongs to reqs[i].
func fitNode(inv ledger.Inventory, used ledger.Usage, reqs []ledger.Request) ([]ledger.Grant, error) {
	var gpuJobs []int
	var gpuReqs []ledger.Request
	for i, r := range reqs {
		if r.GPUCapacity > 0 || r.ExclusiveGPUs > 0 {
			gpuJobs = append(gpuJobs, i)
			gpuReqs = append(gpuReqs, r)
		}
	}
	seq := make([]int, 0, len(reqs))
	if len(gpuReqs) > 0 {
		order, err := fitGPUs(inv, used, gpuReqs)
		if err != nil {
			return nil, err
		}
		for _, o := range order {
			seq = append(seq, gpuJobs[o])
		}
	}
	for i, r := range reqs {
		if r.GPUCapacity == 0 && r.ExclusiveGPUs == 0 {
			seq = append(seq, i)
		}
	}
	grants := make([]ledger.Grant, len(reqs))
	for _, i := range seq {
		g, err := ledger.Fit(inv, used, reqs[i])
		if err != nil {
			return nil, err
		}
		used = used.Add(g)
		grants[i] = g
	}
	return grants, nil
}

// permute calls visit with every permutation of p[k:] (swap recursion) until visit returns true.
func permute(p []int, k int, visit func([]int) bool) bool {
	if k == len(p) {
		return visit(p)
	}
	for i := k; i < len(p); i++ {
		p[k], p[i] = p[i], p[k]
		if permute(p, k+1, visit) {
			return true
		}
		p[k], p[i] = p[i], p[k]
	}
	return false
}
