package scheduler

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// A synthetic mixed inventory: 3 AZs, 2 clouds, GPUs on a tenth of the
// nodes, capabilities on a fifth, nodes of 32..64 capacity units and 16..64
// cores, built through a real FSM and pre-filled to about a third with
// placements made by the engine itself.

const benchPool = "main"

var inventories sync.Map // node count → *benchWorld

type benchWorld struct {
	c     *cluster
	st    *fsm.State
	alloc int64 // total allocatable capacity
}

func benchInventory(b testing.TB, nodes int, fill float64) *benchWorld {
	key := fmt.Sprintf("%d/%.2f", nodes, fill)
	if w, ok := inventories.Load(key); ok {
		return w.(*benchWorld)
	}
	c := newCluster(b.(tb))
	c.pool(fsm.Pool{Name: benchPool})
	rng := rand.New(rand.NewPCG(uint64(nodes), 42))
	var alloc int64
	for i := range nodes {
		n := benchNode(rng, i)
		alloc += n.TotalCapacity
		c.node(n)
	}
	w := &benchWorld{c: c, alloc: alloc}
	if fill > 0 {
		prefill(c, rng, alloc, fill)
	}
	w.st = c.state()
	inventories.Store(key, w)
	return w
}

func benchNode(rng *rand.Rand, i int) fsm.Node {
	az := []string{"az1", "az2", "az3"}[i%3]
	cloud := []string{"aws", "gcp"}[(i/3)%2]
	n := mkNode(fmt.Sprintf("node-%05d", i), benchPool, az, cloud, int64(32+rng.IntN(33))*1000, 16+rng.IntN(49))
	n.Labels["rack"] = fmt.Sprintf("r%d", rng.IntN(20))
	if i%10 == 0 {
		n.GPUs = []ledger.GPU{{Index: 0, Model: "t4", Capacity: 1000}, {Index: 1, Model: "a100", Capacity: 1000}}
	}
	if i%5 == 1 {
		n.Capabilities = []ledger.Capability{
			{Name: "st2110-nic", Count: 4, Attributes: map[string]string{"speed": "25g"}},
			{Name: "licence", Count: 8},
		}
	}
	return n
}

// benchBundle is a random mixed bundle: 1..4 jobs, half resilient, some
// with co-location or separation, a few with GPUs, capabilities or
// constraints.
func benchBundle(rng *rand.Rand, id string, jobs int, resilient bool) *fsm.Bundle {
	spec := fsm.BundleSpec{ID: id, Pool: benchPool, Priority: fsm.PrioritySilver, Placement: fsm.Placement{SameAz: fsm.SameAzOff}}
	for j := range jobs {
		job := mkJob(fmt.Sprintf("j%d", j), int64(1+rng.IntN(8))*500, rng.IntN(3))
		switch rng.IntN(40) {
		case 0:
			job.Requirements.GPUCapacity = 200
		case 1:
			job.Requirements.Capabilities = []ledger.CapabilityRequest{{Name: "st2110-nic", Count: 1}}
		case 2:
			job.EditRules().Constraints = []string{`node.labels.rack != "r7"`}
		}
		if j > 0 {
			switch rng.IntN(3) {
			case 0:
				job.CoLocateWith = []string{"j0"}
			case 1:
				job.SeparateFrom = []string{"j0"}
			}
		}
		spec.Jobs = append(spec.Jobs, job)
	}
	if rng.IntN(4) == 0 {
		spec.Placement.SameAz = fsm.SameAzSoft
	}
	if resilient {
		spec.Resilience = &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Forbid, SameCloud: fsm.Allow}
	}
	return freshBundle(spec)
}

// freshBundle is a pending bundle as the FSM would create it.
func freshBundle(spec fsm.BundleSpec) *fsm.Bundle {
	fsm.Normalize(&spec)
	b := &fsm.Bundle{Spec: spec, State: fsm.StatePending, Epoch: 1}
	for slot := range spec.Replicas() {
		r := fsm.Replica{Slot: slot}
		for _, j := range spec.Jobs {
			r.Jobs = append(r.Jobs, fsm.JobPlacement{Name: j.Name})
		}
		b.Replicas = append(b.Replicas, r)
	}
	return b
}

// prefill places random bundles until about fill of the capacity is used,
// committing them through the FSM in batches.
func prefill(c *cluster, rng *rand.Rand, alloc int64, fill float64) {
	eng := NewEngine(Options{})
	for seq := 0; ; {
		st := c.state()
		if float64(st.Pool(benchPool).Usage.Capacity) >= fill*float64(alloc) {
			return
		}
		batch := eng.Snapshot(st).NewBatch(uint64(seq))
		for range 2000 {
			seq++
			b := benchBundle(rng, fmt.Sprintf("fill-%d", seq), 1+rng.IntN(4), rng.IntN(2) == 0)
			c.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: b.Spec})
			batch.Place(b)
		}
		c.commit(batch.Plan(0))
	}
}
