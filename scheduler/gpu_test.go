package scheduler

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/ledger"
)

// TestGPUSimAgreesWithLedger: the GPU stage's simulation accepts exactly
// the request sets that ledger.Fit can grant in some order, and fitNode then
// grants them.
func TestGPUSimAgreesWithLedger(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var inv ledger.Inventory
		for i := range rapid.IntRange(0, 3).Draw(t, "devs") {
			inv.GPUs = append(inv.GPUs, ledger.GPU{Index: i, Model: rapid.SampledFrom([]string{"t4", "a100"}).Draw(t, "model"),
				Capacity: int64(rapid.IntRange(5, 10).Draw(t, "cap")) * 100})
		}
		used := ledger.Usage{}
		for range rapid.IntRange(0, 2).Draw(t, "held") {
			if g, err := ledger.Fit(inv, used, genGPURequest(t)); err == nil {
				used = used.Add(g)
			}
		}
		var reqs []ledger.Request
		for range rapid.IntRange(1, 4).Draw(t, "reqs") {
			reqs = append(reqs, genGPURequest(t))
		}
		var g gpuSim
		sim := g.fits(inv, used, reqs)
		if truth := fitsSomeOrder(inv, used, reqs); sim != truth {
			t.Fatalf("simulation says %v, ledger in some order says %v", sim, truth)
		}
		if _, err := fitNode(inv, used, reqs); (err == nil) != sim {
			t.Fatalf("fitNode error %v, simulation %v", err, sim)
		}
	})
}

func genGPURequest(t *rapid.T) ledger.Request {
	model := rapid.SampledFrom([]string{"", "t4", "a100"}).Draw(t, "rmodel")
	if rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
		return ledger.Request{ExclusiveGPUs: rapid.IntRange(1, 2).Draw(t, "n"), GPUModel: model}
	}
	return ledger.Request{GPUCapacity: int64(rapid.IntRange(1, 8).Draw(t, "share")) * 100, GPUModel: model}
}
