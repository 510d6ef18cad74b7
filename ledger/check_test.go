package ledger

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	shared := Usage{GPUs: []GPUUse{{Index: 0, Capacity: 700, Shares: 2}, {Index: 2, Exclusive: true}},
		Cores: CoreSet(nil).With(3), Capacity: 3000,
		Capabilities: []CapabilityCount{{Name: "nic", Count: 1}}}
	caps := func(cs ...CapabilityCount) []CapabilityCount { return cs }
	tests := []struct {
		name string
		used Usage
		g    Grant
		err  string
	}{
		{name: "empty grant", g: Grant{}},
		{name: "fits", used: shared, g: Grant{Capacity: 1000, Cores: []int{0, 7}, GPU: &GPUShare{Index: 0, Capacity: 300},
			Capabilities: caps(CapabilityCount{"nic", 1}, CapabilityCount{"lic", 1})}},
		{name: "capacity", used: shared, g: Grant{Capacity: 1001}, err: "capacity"},
		{name: "core taken", used: shared, g: Grant{Cores: []int{2, 3}}, err: "cores"},
		{name: "share over device", used: shared, g: Grant{GPU: &GPUShare{Index: 0, Capacity: 301}}, err: "gpu"},
		{name: "share on exclusive device", used: shared, g: Grant{GPU: &GPUShare{Index: 2, Capacity: 1}}, err: "gpu"},
		{name: "exclusive on shared device", used: shared, g: Grant{ExclusiveGPUs: []int{0}}, err: "gpu"},
		{name: "exclusive on exclusive device", used: shared, g: Grant{ExclusiveGPUs: []int{3, 2}}, err: "gpu"},
		{name: "exclusive on idle devices", used: shared, g: Grant{ExclusiveGPUs: []int{3, 1}}},
		{name: "capability count", used: shared, g: Grant{Capabilities: caps(CapabilityCount{"nic", 2})},
			err: "capability:nic"},
		{name: "capability order", used: shared,
			g:   Grant{Capabilities: caps(CapabilityCount{"lic", 2}, CapabilityCount{"nic", 2})},
			err: "capability:lic"},
		{name: "order capability first", used: shared,
			g: Grant{Capacity: 5000, Cores: []int{3}, ExclusiveGPUs: []int{0},
				Capabilities: caps(CapabilityCount{"nic", 2})}, err: "capability:nic"},
		{name: "order gpu before cores", used: shared,
			g: Grant{Capacity: 5000, Cores: []int{3}, ExclusiveGPUs: []int{0}}, err: "gpu"},
		{name: "order cores before capacity", used: shared, g: Grant{Capacity: 5000, Cores: []int{3}}, err: "cores"},
		{name: "invalid before exhausted", used: shared, g: Grant{Capacity: 5000, Cores: []int{8}}, err: "invalid"},
		{name: "negative capacity", g: Grant{Capacity: -1}, err: "invalid"},
		{name: "core out of range", g: Grant{Cores: []int{8}}, err: "invalid"},
		{name: "negative core", g: Grant{Cores: []int{-1}}, err: "invalid"},
		{name: "duplicate cores", g: Grant{Cores: []int{1, 4, 1}}, err: "invalid"},
		{name: "unknown gpu", g: Grant{GPU: &GPUShare{Index: 9, Capacity: 1}}, err: "invalid"},
		{name: "zero share", g: Grant{GPU: &GPUShare{Index: 0}}, err: "invalid"},
		{name: "share and exclusive", g: Grant{GPU: &GPUShare{Index: 0, Capacity: 1}, ExclusiveGPUs: []int{1}},
			err: "invalid"},
		{name: "unknown exclusive gpu", g: Grant{ExclusiveGPUs: []int{4}}, err: "invalid"},
		{name: "duplicate exclusive gpu", g: Grant{ExclusiveGPUs: []int{1, 1}}, err: "invalid"},
		{name: "unknown capability", g: Grant{Capabilities: caps(CapabilityCount{"fpga", 1})}, err: "invalid"},
		{name: "zero capability", g: Grant{Capabilities: caps(CapabilityCount{"nic", 0})}, err: "invalid"},
		{name: "negative capability", g: Grant{Capabilities: caps(CapabilityCount{"nic", -1})}, err: "invalid"},
		{name: "duplicate capability",
			g: Grant{Capabilities: caps(CapabilityCount{"nic", 1}, CapabilityCount{"nic", 1})}, err: "invalid"},
	}
	inv := testInventory()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, Check(inv, tc.used, tc.g), tc.err)
		})
	}
}

func TestCheckPool(t *testing.T) {
	tests := []struct {
		name string
		caps PoolCaps
		used PoolUsage
		g    Grant
		err  string
	}{
		{name: "no caps", used: PoolUsage{Capacity: 1 << 40, Cores: 1 << 20}, g: Grant{Capacity: 1 << 40, Cores: []int{1}}},
		{name: "capacity exact", caps: PoolCaps{MaxCapacity: 1000}, used: PoolUsage{Capacity: 600},
			g: Grant{Capacity: 400}},
		{name: "capacity over", caps: PoolCaps{MaxCapacity: 1000}, used: PoolUsage{Capacity: 600},
			g: Grant{Capacity: 401}, err: "poolCaps"},
		{name: "cores exact", caps: PoolCaps{MaxCores: 4}, used: PoolUsage{Cores: 2}, g: Grant{Cores: []int{0, 1}}},
		{name: "cores over", caps: PoolCaps{MaxCores: 4}, used: PoolUsage{Cores: 3}, g: Grant{Cores: []int{0, 1}},
			err: "poolCaps"},
		{name: "cores cap ignores capacity", caps: PoolCaps{MaxCores: 4}, g: Grant{Capacity: 1 << 40}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, CheckPool(tc.caps, tc.used, tc.g), tc.err)
		})
	}
}

func TestFits(t *testing.T) {
	full := Usage{Capacity: 4000, Cores: CoreSet(nil).With(7),
		GPUs:         []GPUUse{{Index: 3, Capacity: 500, Shares: 1}, {Index: 1, Exclusive: true}},
		Capabilities: []CapabilityCount{{Name: "lic", Count: 1}, {Name: "nic", Count: 2}}}
	shrink := func(f func(*Inventory)) Inventory {
		inv := testInventory()
		f(&inv)
		return inv
	}
	tests := []struct {
		name string
		inv  Inventory
		err  string
	}{
		{name: "exactly full", inv: testInventory()},
		{name: "capacity", inv: shrink(func(i *Inventory) { i.Allocatable = 3999 }), err: "capacity"},
		{name: "cores", inv: shrink(func(i *Inventory) { i.TotalCores = 7 }), err: "cores"},
		{name: "gpu capacity", inv: shrink(func(i *Inventory) { i.GPUs[3].Capacity = 499 }), err: "gpu"},
		{name: "gpu removed", inv: shrink(func(i *Inventory) { i.GPUs = i.GPUs[:1] }), err: "gpu"},
		{name: "capability count", inv: shrink(func(i *Inventory) { i.Capabilities[0].Count = 1 }),
			err: "capability:nic"},
		{name: "capability removed", inv: shrink(func(i *Inventory) { i.Capabilities = i.Capabilities[:1] }),
			err: "capability:lic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, Fits(tc.inv, full), tc.err)
		})
	}
	corrupt := Usage{GPUs: []GPUUse{{Index: 0, Capacity: 1, Shares: 1, Exclusive: true}}}
	wantErr(t, Fits(testInventory(), corrupt), "gpu")
}

func TestExhaustedError(t *testing.T) {
	err := error(&ExhaustedError{Dimension: "cores", Detail: "need 2, 1 free of 8"})
	if got := err.Error(); !strings.Contains(got, "cores") || !strings.Contains(got, "need 2") {
		t.Fatalf("Error() = %q", got)
	}
	wantErr(t, err, "cores")
	if got := (&ExhaustedError{Dimension: "gpu"}).Error(); got != "ledger: gpu exhausted" {
		t.Fatalf("Error() = %q", got)
	}
}
