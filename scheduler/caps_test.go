package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestClusterAndGroupCaps: placement keeps the cluster's and a cap group's
// reservations within their caps across pools, counting what the batch
// placed before, and explain names the cap that stopped a bundle.
func TestClusterAndGroupCaps(t *testing.T) {
	cases := []struct {
		name     string
		caps     fsm.ClusterCaps
		bundles  []string // id:pool:capacity[:cores[:memoryMiB]], placed in one batch in this order
		unplaced string   // the bundle left unplaced, "" for none
		stage    string
		detail   string
	}{
		{name: "no caps: everything fits", bundles: []string{"a1:a:4000", "b1:b:2000", "c1:c:7000"}},
		{name: "the group cap stops the second pool of the group",
			caps:    fsm.ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 5000}}},
			bundles: []string{"a1:a:4000", "b1:b:2000", "c1:c:7000"}, unplaced: "b1",
			stage: ledger.DimGroupCaps, detail: "cap group g capacity cap: need 2, 1 free of 5"},
		{name: "the cluster cap stops a pool outside every group",
			caps:    fsm.ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 10000}},
			bundles: []string{"a1:a:4000", "b1:b:2000", "c1:c:7000"}, unplaced: "c1",
			stage: ledger.DimClusterCaps, detail: "cluster capacity cap: need 7, 4 free of 10"},
		{name: "cores count too",
			caps:    fsm.ClusterCaps{Caps: ledger.PoolCaps{MaxCores: 1}},
			bundles: []string{"a1:a:1000:1", "c1:c:1000:1"}, unplaced: "c1",
			stage: ledger.DimClusterCaps, detail: "cluster cores cap: need 1, 0 free of 1"},
		{name: "memory counts too, in a group",
			caps:    fsm.ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxMemoryMiB: 6000}}},
			bundles: []string{"a1:a:1000:0:4096", "b1:b:1000:0:4096", "c1:c:1000:0:4096"}, unplaced: "b1",
			stage: ledger.DimGroupCaps, detail: "cap group g memory cap: need 4096 MiB, 1904 MiB free of 6000 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			for _, p := range []fsm.Pool{{Name: "a", CapGroup: "g"}, {Name: "b", CapGroup: "g"}, {Name: "c"}} {
				c.pool(p)
				n := mkNode("n-"+p.Name, p.Name, "az1", "x", 8000, 4)
				n.TotalMemoryMiB = 8192
				c.node(n)
			}
			c.ok(fsm.SetCapsType, &fsm.SetCapsRequest{Caps: tc.caps})
			var list []*fsm.Bundle
			for _, spec := range tc.bundles {
				parts := strings.Split(spec, ":")
				var capacity int64
				cores := 0
				if _, err := fmt.Sscan(parts[2], &capacity); err != nil {
					t.Fatal(err)
				}
				if len(parts) > 3 && parts[3] != "0" {
					cores = 1
				}
				job := mkJob("j", capacity, cores)
				if len(parts) > 4 {
					if _, err := fmt.Sscan(parts[4], &job.Requirements.MemoryMiB); err != nil {
						t.Fatal(err)
					}
				}
				list = append(list, c.bundle(fsm.BundleSpec{ID: parts[0], Pool: parts[1], Jobs: []fsm.Job{job}}))
			}
			plan, res := PlaceBatch(c.state(), list, 1, 1)
			for _, r := range res {
				placed := r.PrimaryPlaced
				if placed == (r.BundleID == tc.unplaced) {
					t.Fatalf("%s placed=%v, want the unplaced one to be %q", r.BundleID, placed, tc.unplaced)
				}
				if placed {
					continue
				}
				if r.Explain == nil || r.Explain.Filtered[tc.stage] != 1 || r.Explain.NearestMiss == nil ||
					r.Explain.NearestMiss.Stage != tc.stage || r.Explain.NearestMiss.Detail != tc.detail {
					t.Fatalf("explain %+v (miss %+v), want stage %s detail %q", r.Explain, r.Explain.NearestMiss, tc.stage, tc.detail)
				}
			}
			c.commit(plan) // the FSM's re-check agrees
			checkInvariants(t, c.state())
		})
	}
}
