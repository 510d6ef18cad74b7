package ledger

import (
	"errors"
	"reflect"
	"testing"
)

// testInventory is a node with 8 cores, four GPUs of two models and two
// capabilities, used by the table tests.
func testInventory() Inventory {
	return Inventory{
		Allocatable: 4000,
		TotalCores:  8,
		GPUs: []GPU{
			{Index: 0, Model: "a100", Capacity: 1000},
			{Index: 1, Model: "t4", Capacity: 1000},
			{Index: 2, Model: "a100", Capacity: 1000},
			{Index: 3, Model: "a100", Capacity: 500},
		},
		Capabilities: []Capability{
			{Name: "nic", Count: 2, Attributes: map[string]string{"speed": "100g", "vendor": "mlx"}},
			{Name: "lic", Count: 1},
		},
	}
}

// wantErr checks err against an expected outcome: "" for success, "invalid"
// for an ErrInvalidGrant error, otherwise the exhausted dimension.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch want {
	case "":
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case "invalid":
		if !errors.Is(err, ErrInvalidGrant) {
			t.Fatalf("err = %v, want ErrInvalidGrant", err)
		}
		if errors.Is(err, ErrExhausted) {
			t.Fatalf("invalid error also matches ErrExhausted: %v", err)
		}
	default:
		var ex *ExhaustedError
		if !errors.As(err, &ex) {
			t.Fatalf("err = %v, want *ExhaustedError{%s}", err, want)
		}
		if ex.Dimension != want {
			t.Fatalf("dimension = %q (%v), want %q", ex.Dimension, err, want)
		}
		if !errors.Is(err, ErrExhausted) {
			t.Fatalf("errors.Is(err, ErrExhausted) = false")
		}
	}
}

func nic(n int64, attrs map[string]string) CapabilityRequest {
	return CapabilityRequest{Name: "nic", Count: n, AttributeMatches: attrs}
}

// fitCases are TestFit's table: err is "" for success, "invalid", or the
// exhausted dimension.
var fitCases = []struct {
	name string
	used Usage
	req  Request
	want Grant
	err  string
}{
	{name: "empty request", want: Grant{}},
	{name: "capacity exact", req: Request{Capacity: 4000}, want: Grant{Capacity: 4000}},
	{name: "capacity exhausted", used: Usage{Capacity: 3500}, req: Request{Capacity: 600}, err: "capacity"},
	{name: "cores lowest free", used: Usage{Cores: CoreSet(nil).With(0, 2)},
		req: Request{Cores: 3}, want: Grant{Cores: []int{1, 3, 4}}},
	{name: "cores all", req: Request{Cores: 8}, want: Grant{Cores: []int{0, 1, 2, 3, 4, 5, 6, 7}}},
	{name: "cores exhausted", used: Usage{Cores: CoreSet(nil).With(0, 1, 2, 3, 4, 5)},
		req: Request{Cores: 3}, err: "cores"},
	{name: "cores more than node", req: Request{Cores: 9}, err: "cores"},
	{name: "share best fit any model",
		used: Usage{GPUs: []GPUUse{{Index: 0, Capacity: 200, Shares: 1}}},
		req:  Request{GPUCapacity: 400}, want: Grant{GPU: &GPUShare{Index: 3, Capacity: 400}}},
	{name: "share best fit model",
		used: Usage{GPUs: []GPUUse{{Index: 0, Capacity: 200, Shares: 1}}},
		req:  Request{GPUCapacity: 600, GPUModel: "a100"}, want: Grant{GPU: &GPUShare{Index: 0, Capacity: 600}}},
	{name: "share other model", req: Request{GPUCapacity: 600, GPUModel: "t4"},
		want: Grant{GPU: &GPUShare{Index: 1, Capacity: 600}}},
	{name: "share tie lowest index", req: Request{GPUCapacity: 1000, GPUModel: "a100"},
		want: Grant{GPU: &GPUShare{Index: 0, Capacity: 1000}}},
	{name: "share skips exclusive device",
		used: Usage{GPUs: []GPUUse{{Index: 3, Exclusive: true}}},
		req:  Request{GPUCapacity: 100}, want: Grant{GPU: &GPUShare{Index: 0, Capacity: 100}}},
	{name: "share unknown model", req: Request{GPUCapacity: 100, GPUModel: "h100"}, err: "gpu"},
	{name: "share too big", req: Request{GPUCapacity: 1001}, err: "gpu"},
	{name: "exclusive skips shared",
		used: Usage{GPUs: []GPUUse{{Index: 0, Capacity: 1, Shares: 1}}},
		req:  Request{ExclusiveGPUs: 2, GPUModel: "a100"}, want: Grant{ExclusiveGPUs: []int{2, 3}}},
	{name: "exclusive all", req: Request{ExclusiveGPUs: 4}, want: Grant{ExclusiveGPUs: []int{0, 1, 2, 3}}},
	{name: "exclusive needs idle devices",
		used: Usage{GPUs: []GPUUse{{Index: 0, Capacity: 1, Shares: 1}, {Index: 2, Exclusive: true}}},
		req:  Request{ExclusiveGPUs: 2, GPUModel: "a100"}, err: "gpu"},
	{name: "capability count", req: Request{Capabilities: []CapabilityRequest{nic(2, nil)}},
		want: Grant{Capabilities: []CapabilityCount{{Name: "nic", Count: 2}}}},
	{name: "capability exhausted", used: Usage{Capabilities: []CapabilityCount{{Name: "nic", Count: 1}}},
		req: Request{Capabilities: []CapabilityRequest{nic(2, nil)}}, err: "capability:nic"},
	{name: "capability attributes match",
		req:  Request{Capabilities: []CapabilityRequest{nic(1, map[string]string{"speed": "100g", "vendor": "mlx"})}},
		want: Grant{Capabilities: []CapabilityCount{{Name: "nic", Count: 1}}}},
	{name: "capability attribute value differs",
		req: Request{Capabilities: []CapabilityRequest{nic(1, map[string]string{"speed": "25g"})}},
		err: "capability:nic"},
	{name: "capability attribute missing",
		req: Request{Capabilities: []CapabilityRequest{nic(1, map[string]string{"numa": "0"})}},
		err: "capability:nic"},
	{name: "capability unknown", req: Request{Capabilities: []CapabilityRequest{{Name: "fpga", Count: 1}}},
		err: "capability:fpga"},
	{name: "capability repeated names merge",
		req:  Request{Capabilities: []CapabilityRequest{{Name: "nic", Count: 1}, {Name: "lic", Count: 1}, nic(1, nil)}},
		want: Grant{Capabilities: []CapabilityCount{{Name: "lic", Count: 1}, {Name: "nic", Count: 2}}}},
	{name: "capability repeated names exhaust",
		req: Request{Capabilities: []CapabilityRequest{nic(1, nil), nic(2, nil)}}, err: "capability:nic"},
	{name: "capability zero count is a presence check",
		req: Request{Capabilities: []CapabilityRequest{{Name: "lic"}}}, want: Grant{}},
	{name: "capability zero count absent",
		req: Request{Capabilities: []CapabilityRequest{{Name: "fpga"}}}, err: "capability:fpga"},
	{name: "order capability in request order",
		req: Request{Capabilities: []CapabilityRequest{{Name: "lic", Count: 2}, nic(3, nil)}},
		err: "capability:lic"},
	{name: "order capability before gpu",
		req: Request{Capacity: 9000, Cores: 9, GPUCapacity: 5000, Capabilities: []CapabilityRequest{nic(3, nil)}},
		err: "capability:nic"},
	{name: "order gpu before cores", req: Request{Capacity: 9000, Cores: 9, ExclusiveGPUs: 5}, err: "gpu"},
	{name: "order cores before capacity", req: Request{Capacity: 9000, Cores: 9}, err: "cores"},
	{name: "everything",
		used: Usage{Capacity: 1000, Cores: CoreSet(nil).With(0)},
		req: Request{Capacity: 2500, Cores: 2, GPUCapacity: 250, GPUModel: "a100",
			Capabilities: []CapabilityRequest{nic(1, map[string]string{"vendor": "mlx"})}},
		want: Grant{Capacity: 2500, Cores: []int{1, 2}, GPU: &GPUShare{Index: 3, Capacity: 250},
			Capabilities: []CapabilityCount{{Name: "nic", Count: 1}}}},
	{name: "invalid share and exclusive", req: Request{GPUCapacity: 1, ExclusiveGPUs: 1}, err: "invalid"},
	{name: "invalid negative capacity", req: Request{Capacity: -1}, err: "invalid"},
	{name: "invalid negative cores", req: Request{Cores: -1}, err: "invalid"},
	{name: "invalid negative gpu", req: Request{GPUCapacity: -1}, err: "invalid"},
	{name: "invalid negative exclusive", req: Request{ExclusiveGPUs: -1}, err: "invalid"},
	{name: "invalid negative capability", req: Request{Capabilities: []CapabilityRequest{nic(-1, nil)}}, err: "invalid"},
}

func TestFit(t *testing.T) {
	inv := testInventory()
	for _, tc := range fitCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Fit(inv, tc.used, tc.req)
			wantErr(t, err, tc.err)
			if tc.err != "" {
				return
			}
			if !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("grant = %+v, want %+v", g, tc.want)
			}
			// Whatever Fit chooses must pass Check against the same state.
			if err := Check(inv, tc.used, g); err != nil {
				t.Fatalf("Check(Fit grant) = %v", err)
			}
		})
	}
}

func TestFitDisjointCores(t *testing.T) {
	inv := testInventory()
	var used Usage
	seen := map[int]bool{}
	for range 4 {
		g, err := Fit(inv, used, Request{Cores: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range g.Cores {
			if seen[c] {
				t.Fatalf("core %d granted twice", c)
			}
			seen[c] = true
		}
		used = used.Add(g)
	}
	if _, err := Fit(inv, used, Request{Cores: 1}); err == nil {
		t.Fatal("ninth core granted on an 8-core node")
	}
}

func TestFitSharedDeviceNotExclusive(t *testing.T) {
	inv := Inventory{Allocatable: 1, GPUs: []GPU{{Index: 0, Model: "x", Capacity: 1000}}}
	share, err := Fit(inv, Usage{}, Request{GPUCapacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	used := Usage{}.Add(share)
	_, err = Fit(inv, used, Request{ExclusiveGPUs: 1})
	wantErr(t, err, "gpu")

	excl, err := Fit(inv, Usage{}, Request{ExclusiveGPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Fit(inv, Usage{}.Add(excl), Request{GPUCapacity: 1})
	wantErr(t, err, "gpu")
}

// TestFitDetailsInUnits: Fit's details reach the explanations operators
// read (bundle plan, node services), so quantities are written as the API
// takes them (0.5), not in milli units (500m).
func TestFitDetailsInUnits(t *testing.T) {
	inv := Inventory{Allocatable: 4000, GPUs: []GPU{{Index: 0, Model: "t4", Capacity: 1000}}}
	used := Usage{Capacity: 2500, GPUs: []GPUUse{{Index: 0, Capacity: 600, Shares: 1}}}
	tests := []struct {
		req    Request
		detail string
	}{
		{Request{Capacity: 2000}, "need 2, 1.5 free of 4"},
		{Request{Capacity: 100, GPUCapacity: 500, GPUModel: "t4"}, "no t4 gpu with 0.5 free"},
	}
	for _, tt := range tests {
		_, err := Fit(inv, used, tt.req)
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Detail != tt.detail {
			t.Errorf("Fit(%+v) = %v, want detail %q", tt.req, err, tt.detail)
		}
	}
}
