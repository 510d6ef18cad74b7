package ledger

import "testing"

// BenchmarkFitReserve measures one placement round trip on a busy node:
// Fit a request, Reserve it, then Release it.
func BenchmarkFitReserve(b *testing.B) {
	s := NewMemStore()
	s.AddNode("n", Inventory{
		Allocatable: 64000,
		TotalCores:  64,
		GPUs: []GPU{
			{Index: 0, Model: "a100", Capacity: 1000},
			{Index: 1, Model: "a100", Capacity: 1000},
			{Index: 2, Model: "t4", Capacity: 1000},
			{Index: 3, Model: "t4", Capacity: 1000},
		},
		Capabilities: []Capability{
			{Name: "nic", Count: 4, Attributes: map[string]string{"speed": "100g"}},
			{Name: "lic", Count: 8},
			{Name: "sdi", Count: 2},
		},
	})
	s.SetPoolCaps("p", PoolCaps{MaxCapacity: 1 << 40, MaxCores: 1 << 20})
	// Half-fill the node so Fit has to search.
	for i := range 8 {
		k := Key{Bundle: "bg", Job: string(rune('a' + i))}
		inv, used, _ := s.Node("n")
		g, err := Fit(inv, used, Request{Capacity: 2000, Cores: 4, GPUCapacity: 200})
		if err != nil {
			b.Fatal(err)
		}
		if err := Reserve(s, Reservation{Key: k, Node: "n", Pool: "p", Grant: g}); err != nil {
			b.Fatal(err)
		}
	}
	req := Request{
		Capacity: 1500, Cores: 4, GPUCapacity: 250, GPUModel: "t4",
		Capabilities: []CapabilityRequest{
			{Name: "nic", Count: 1, AttributeMatches: map[string]string{"speed": "100g"}},
			{Name: "lic", Count: 1},
		},
	}
	k := Key{Bundle: "bench", Job: "enc"}
	b.ReportAllocs()
	for b.Loop() {
		inv, used, _ := s.Node("n")
		g, err := Fit(inv, used, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := Reserve(s, Reservation{Key: k, Node: "n", Pool: "p", Grant: g}); err != nil {
			b.Fatal(err)
		}
		if !Release(s, k) {
			b.Fatal("release failed")
		}
	}
}
