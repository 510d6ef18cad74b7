package ledger

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func TestCoreSet(t *testing.T) {
	tests := []struct {
		name   string
		set    CoreSet
		with   []int
		minus  []int
		want   []int
		absent []int
	}{
		{name: "empty", want: nil, absent: []int{0, 63, 64}},
		{name: "add low", with: []int{0, 3, 63}, want: []int{0, 3, 63}, absent: []int{1, 64}},
		{name: "span words", with: []int{1, 64, 200}, want: []int{1, 64, 200}, absent: []int{65, 199}},
		{name: "negative ignored", with: []int{-1, 2}, want: []int{2}, absent: []int{-1}},
		{name: "remove all", with: []int{5, 130}, minus: []int{5, 130}, want: nil},
		{name: "remove absent", with: []int{5}, minus: []int{6, 1000, -3}, want: []int{5}},
		{name: "remove top trims", with: []int{1, 190}, minus: []int{190}, want: []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.set.With(tc.with...).Without(tc.minus...)
			if !slices.Equal(got.Slice(), tc.want) {
				t.Fatalf("Slice() = %v, want %v", got.Slice(), tc.want)
			}
			if got.Count() != len(tc.want) {
				t.Fatalf("Count() = %d, want %d", got.Count(), len(tc.want))
			}
			for _, c := range tc.want {
				if !got.Has(c) {
					t.Errorf("Has(%d) = false", c)
				}
			}
			for _, c := range tc.absent {
				if got.Has(c) {
					t.Errorf("Has(%d) = true", c)
				}
			}
			// Canonical form: equal membership means DeepEqual.
			if want := CoreSet(nil).With(tc.want...); !reflect.DeepEqual(got, want) {
				t.Errorf("not canonical: %v vs %v", got, want)
			}
		})
	}
}

func TestCoreSetDoesNotMutateReceiver(t *testing.T) {
	base := CoreSet(nil).With(1, 2, 3)
	_ = base.With(4)
	_ = base.Without(2)
	if !slices.Equal(base.Slice(), []int{1, 2, 3}) {
		t.Fatalf("receiver mutated: %v", base.Slice())
	}
}

func TestCoreSetJSON(t *testing.T) {
	u := Usage{Capacity: 5, Cores: CoreSet(nil).With(0, 2, 70), Reservations: 1}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"capacity":5,"cores":[0,2,70],"reservations":1}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	var back Usage
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, u) {
		t.Fatalf("round trip = %+v, want %+v", back, u)
	}
	for _, bad := range []string{`[-1]`, `[16777217]`, `{}`} {
		var c CoreSet
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

func TestUsageAddSub(t *testing.T) {
	share := Grant{Capacity: 100, Cores: []int{1, 2}, GPU: &GPUShare{Index: 1, Capacity: 300},
		Capabilities: []CapabilityCount{{Name: "nic", Count: 1}}}
	excl := Grant{Capacity: 50, ExclusiveGPUs: []int{3, 0},
		Capabilities: []CapabilityCount{{Name: "lic", Count: 2}, {Name: "nic", Count: 1}}}

	u := Usage{}.Add(share).Add(excl)
	want := Usage{
		Capacity: 150,
		Cores:    CoreSet(nil).With(1, 2),
		GPUs: []GPUUse{
			{Index: 0, Exclusive: true},
			{Index: 1, Capacity: 300, Shares: 1},
			{Index: 3, Exclusive: true},
		},
		Capabilities: []CapabilityCount{{Name: "lic", Count: 2}, {Name: "nic", Count: 2}},
		Reservations: 2,
	}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("Add = %+v\nwant %+v", u, want)
	}
	if got := u.GPU(1); got != want.GPUs[1] {
		t.Errorf("GPU(1) = %+v", got)
	}
	if got := u.GPU(2); got != (GPUUse{Index: 2}) {
		t.Errorf("GPU(2) = %+v, want idle", got)
	}
	if got := u.Capability("nic"); got != 2 {
		t.Errorf("Capability(nic) = %d", got)
	}
	if got := u.Capability("none"); got != 0 {
		t.Errorf("Capability(none) = %d", got)
	}
	if back := u.Sub(excl); !reflect.DeepEqual(back, Usage{}.Add(share)) {
		t.Errorf("Sub(excl) = %+v", back)
	}
	if back := u.Sub(excl).Sub(share); !reflect.DeepEqual(back, Usage{}) {
		t.Errorf("Sub both = %+v, want zero", back)
	}
	// Sub of something never added clamps instead of going negative.
	if back := (Usage{}).Sub(share); !reflect.DeepEqual(back, Usage{}) {
		t.Errorf("Sub from zero = %+v", back)
	}
}

func TestUsageAddDoesNotAlias(t *testing.T) {
	g := Grant{Capacity: 1, Cores: []int{0}, GPU: &GPUShare{Index: 0, Capacity: 1},
		Capabilities: []CapabilityCount{{Name: "a", Count: 1}}}
	u := Usage{}.Add(g)
	snapshot := Usage{}.Add(g)
	_ = u.Add(Grant{Cores: []int{1}, GPU: &GPUShare{Index: 0, Capacity: 5},
		Capabilities: []CapabilityCount{{Name: "a", Count: 3}}})
	_ = u.Sub(g)
	if !reflect.DeepEqual(u, snapshot) {
		t.Fatalf("receiver changed: %+v", u)
	}
}

func TestPoolUsage(t *testing.T) {
	g := Grant{Capacity: 300, Cores: []int{4, 5}}
	p := PoolUsage{Capacity: 10, Cores: 1}.Add(g)
	if p != (PoolUsage{Capacity: 310, Cores: 3}) {
		t.Fatalf("Add = %+v", p)
	}
	if p = p.Sub(g).Sub(g); p != (PoolUsage{}) {
		t.Fatalf("Sub clamps to zero, got %+v", p)
	}
}

func TestGrantEqual(t *testing.T) {
	base := Grant{Capacity: 10, Cores: []int{1, 2}, GPU: &GPUShare{Index: 0, Capacity: 5},
		Capabilities: []CapabilityCount{{Name: "a", Count: 1}, {Name: "b", Count: 2}}}
	tests := []struct {
		name string
		b    Grant
		want bool
	}{
		{"clone", base.Clone(), true},
		{"reordered", Grant{Capacity: 10, Cores: []int{2, 1}, GPU: &GPUShare{Index: 0, Capacity: 5},
			Capabilities: []CapabilityCount{{Name: "b", Count: 2}, {Name: "a", Count: 1}}}, true},
		{"capacity", Grant{Capacity: 11, Cores: base.Cores, GPU: base.GPU, Capabilities: base.Capabilities}, false},
		{"cores", Grant{Capacity: 10, Cores: []int{1, 3}, GPU: base.GPU, Capabilities: base.Capabilities}, false},
		{"no gpu", Grant{Capacity: 10, Cores: base.Cores, Capabilities: base.Capabilities}, false},
		{"gpu share", Grant{Capacity: 10, Cores: base.Cores, GPU: &GPUShare{Index: 0, Capacity: 6},
			Capabilities: base.Capabilities}, false},
		{"caps", Grant{Capacity: 10, Cores: base.Cores, GPU: base.GPU,
			Capabilities: []CapabilityCount{{Name: "a", Count: 1}, {Name: "b", Count: 3}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GrantEqual(base, tc.b); got != tc.want {
				t.Fatalf("GrantEqual = %v, want %v", got, tc.want)
			}
			if got := GrantEqual(tc.b, base); got != tc.want {
				t.Fatalf("GrantEqual not symmetric")
			}
		})
	}
	if !GrantEqual(Grant{Cores: []int{}}, Grant{}) {
		t.Error("nil and empty slices should be equal")
	}
	if GrantEqual(Grant{Cores: []int{1, 1}}, Grant{Cores: []int{1, 2}}) {
		t.Error("duplicate cores compared equal")
	}
}

func TestKey(t *testing.T) {
	k := Key{Bundle: "b1", Replica: 1, Job: "enc"}
	if got := k.String(); got != "b1:1:enc" {
		t.Fatalf("String() = %q", got)
	}
	keys := []Key{{"b", 1, "a"}, {"a", 2, "z"}, {"b", 0, "z"}, {"b", 1, "0"}}
	slices.SortFunc(keys, Key.Compare)
	want := []Key{{"a", 2, "z"}, {"b", 0, "z"}, {"b", 1, "0"}, {"b", 1, "a"}}
	if !slices.Equal(keys, want) {
		t.Fatalf("sorted = %v", keys)
	}
}
