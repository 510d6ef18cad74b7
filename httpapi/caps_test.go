package httpapi

import (
	"reflect"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestCapsRoundTrip: caps set through the client read back with what each
// scope holds and the pools of each group; read-only fields sent back are
// ignored; clearing them keeps the groups' pools listed. (Explain stages
// are the scheduler's tests'; this backend has no planner.)
func TestCapsRoundTrip(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1") // 1.5 units and 2 cores in p1
	if _, err := e.c.PutPool(ctx(t), api.Pool{Name: "p1", Kind: "cluster", CapGroup: "rack-7",
		Tiers: []api.Tier{{Name: "onprem", Cloud: "dc"}, {Name: "burst", Cloud: "aws"}}}); err != nil {
		t.Fatal(err)
	}
	in := api.ClusterCaps{PoolCaps: api.PoolCaps{MaxCapacity: 100, MaxCores: 6}, Groups: map[string]api.CapGroup{
		"rack-7": {PoolCaps: api.PoolCaps{MaxCapacity: 4, MaxMemoryMiB: 4096}}, "spare": {PoolCaps: api.PoolCaps{MaxCores: 1}},
	}}
	got, err := e.c.SetCaps(ctx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	want := api.ClusterCaps{PoolCaps: api.PoolCaps{MaxCapacity: 100, MaxCores: 6}, Usage: &api.PoolUsage{Capacity: 1.5, Cores: 2},
		Groups: map[string]api.CapGroup{
			"rack-7": {PoolCaps: api.PoolCaps{MaxCapacity: 4, MaxMemoryMiB: 4096}, Usage: &api.PoolUsage{Capacity: 1.5, Cores: 2}, Pools: []string{"p1"}},
			"spare":  {PoolCaps: api.PoolCaps{MaxCores: 1}, Usage: &api.PoolUsage{}},
		}, ModifyIndex: got.ModifyIndex}
	if !reflect.DeepEqual(*got, want) || got.ModifyIndex == 0 {
		t.Fatalf("caps as stored\n got %+v\nwant %+v", *got, want)
	}
	again, err := e.c.SetCaps(ctx(t), *got) // read-only fields are ignored
	if err != nil || again.MaxCapacity != 100 || again.Groups["rack-7"].MaxCapacity != 4 {
		t.Fatalf("put back: %+v %v", again, err)
	}
	read, _, err := e.c.Caps(ctx(t), nil)
	if err != nil || read.Groups["spare"].MaxCores != 1 {
		t.Fatalf("GET /v1/caps: %+v %v", read, err)
	}

	if _, err := e.c.SetCaps(ctx(t), api.ClusterCaps{}); err != nil {
		t.Fatal(err)
	}
	if cleared, _, _ := e.c.Caps(ctx(t), nil); cleared.MaxCapacity != 0 || cleared.Groups["rack-7"].MaxCapacity != 0 ||
		len(cleared.Groups["rack-7"].Pools) != 1 {
		t.Fatalf("after clearing: %+v", cleared)
	}
}
