package scheduler

import (
	"github.com/amserver/amserver/ledger"
)

// gpuSim replays ledger.Fit's GPU choices without allocating or formatting
// errors, for the GPU stage, which runs on every candidate of a GPU job.
// It must choose exactly as ledger.Fit does (fitShare: the matching,
// non-exclusive device left with the least free capacity, ties to the lowest
// index; fitExclusive: the lowest-index idle matching devices), so that a
// node the stage accepts is one fitNode can grant; TestGPUSimAgreesWithLedger
// checks that.
type gpuSim struct {
	devs []simDev // reused across evaluations
}

type simDev struct {
	index     int
	model     string
	free      int64
	exclusive bool
	shares    int
	capacity  int64
}

func (d *simDev) idle() bool { return d.free == d.capacity && !d.exclusive && d.shares == 0 }

func (g *gpuSim) reset(inv ledger.Inventory, used ledger.Usage) {
	g.devs = g.devs[:0]
	for _, d := range inv.GPUs {
		u := used.GPU(d.Index)
		g.devs = append(g.devs, simDev{index: d.Index, model: d.Model, free: d.Capacity - u.Capacity,
			exclusive: u.Exclusive, shares: u.Shares, capacity: d.Capacity})
	}
}

// fit applies one request; false when it does not fit (or is malformed).
func (g *gpuSim) fit(r ledger.Request) bool {
	switch {
	case r.GPUCapacity < 0 || r.ExclusiveGPUs < 0 || (r.GPUCapacity > 0 && r.ExclusiveGPUs > 0):
		return false
	case r.GPUCapacity > 0:
		return g.share(r.GPUModel, r.GPUCapacity)
	case r.ExclusiveGPUs > 0:
		return g.exclusive(r.GPUModel, r.ExclusiveGPUs)
	}
	return true
}

func (g *gpuSim) share(model string, need int64) bool {
	best := -1
	var bestLeft int64
	for i := range g.devs {
		d := &g.devs[i]
		if (model != "" && d.model != model) || d.exclusive {
			continue
		}
		left := d.free - need
		if left < 0 {
			continue
		}
		if best < 0 || left < bestLeft || (left == bestLeft && d.index < g.devs[best].index) {
			best, bestLeft = i, left
		}
	}
	if best < 0 {
		return false
	}
	g.devs[best].free -= need
	g.devs[best].shares++
	return true
}

func (g *gpuSim) exclusive(model string, n int) bool {
	for ; n > 0; n-- {
		lowest := -1
		for i := range g.devs {
			d := &g.devs[i]
			if (model == "" || d.model == model) && d.idle() && (lowest < 0 || d.index < g.devs[lowest].index) {
				lowest = i
			}
		}
		if lowest < 0 {
			return false
		}
		g.devs[lowest].exclusive = true
	}
	return true
}

// fits reports whether the GPU requests fit on a node together in some
// order (see fitGPUs). The common cases (one request; the canonical order
// fits) allocate nothing once the simulator has grown to the node's devices.
func (g *gpuSim) fits(inv ledger.Inventory, used ledger.Usage, reqs []ledger.Request) bool {
	if len(reqs) == 1 {
		g.reset(inv, used)
		return g.fit(reqs[0])
	}
	order := canonicalOrder(reqs)
	if g.inOrder(inv, used, reqs, order) {
		return true
	}
	if len(reqs) > maxPermutedGPUJobs {
		return false
	}
	return permute(order, 0, func(p []int) bool { return g.inOrder(inv, used, reqs, p) })
}

func (g *gpuSim) inOrder(inv ledger.Inventory, used ledger.Usage, reqs []ledger.Request, order []int) bool {
	g.reset(inv, used)
	for _, i := range order {
		if !g.fit(reqs[i]) {
			return false
		}
	}
	return true
}
