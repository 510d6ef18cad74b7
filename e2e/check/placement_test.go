package check

import (
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

func node(id, az, cloud string) api.Node {
	return api.Node{
		NodeSpec: api.NodeSpec{ID: id, Labels: map[string]string{"az": az, "cloud": cloud},
			TotalCapacity: 4, TotalCores: 4, GPUs: []api.GPU{{Index: 0, TotalCapacity: 1}}},
		Status: api.NodeReady, Allocatable: 4,
	}
}

func testNodes() []api.Node {
	return []api.Node{node("n1", "az-1", "cloud-a"), node("n2", "az-2", "cloud-a"), node("n3", "az-3", "cloud-b"), node("n4", "az-1", "cloud-a")}
}

// bundle has one job of the given capacity; nodes[i] places replica i
// (role primary for 0, backup after).
func bundle(id string, capacity float64, epoch uint64, nodes ...string) api.Bundle {
	b := api.Bundle{
		BundleSpec: api.BundleSpec{ID: id, Pool: "p", Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: capacity}}}},
		State:      api.StatePlaced, Epoch: epoch,
	}
	if len(nodes) > 1 {
		b.Resilience = &api.Resilience{SameNode: api.Forbid}
	}
	for i, n := range nodes {
		role := api.RoleBackup
		if i == 0 {
			role = api.RolePrimary
		}
		b.Replicas = append(b.Replicas, api.Replica{Index: i, Role: role, State: api.StatePlaced,
			Jobs: []api.JobPlacement{{Name: "j", NodeID: n}}})
	}
	return b
}

func sample(call, ret int64, stale bool, bs ...api.Bundle) workload.Sample {
	return workload.Sample{Server: "s1", Stale: stale, Call: call, Return: ret, Nodes: testNodes(), Bundles: bs}
}

type placementCase struct {
	name    string
	samples []workload.Sample
	want    string
}

func mod(b api.Bundle, f func(*api.Bundle)) api.Bundle { f(&b); return b }

func pin(cores ...int) func(*api.Bundle) {
	return func(b *api.Bundle) { b.Replicas[0].Jobs[0].Cores = cores }
}

func exclusive(b *api.Bundle) { b.Replicas[0].Jobs[0].GPUs = []int{0} }

func one(bs ...api.Bundle) []workload.Sample { return []workload.Sample{sample(0, 10, false, bs...)} }

func ledgerCases() []placementCase {
	return []placementCase{
		{"valid", one(mod(bundle("a", 2, 1, "n1", "n2"), pin(0, 1)), mod(bundle("b", 2, 1, "n1"), pin(2, 3))), ""},
		{"no samples", nil, ""},
		// Capacity comes from the node's own reserved figure: the bundles
		// are another read, so their sum is not compared with it.
		{"jobs summing past a node read earlier", one(bundle("a", 3, 1, "n1"), bundle("b", 1.5, 1, "n1")), ""},
		{"ledger reports over-commit", []workload.Sample{func() workload.Sample {
			s := sample(0, 10, false)
			s.Nodes[1].Reserved.Capacity = 4.5
			return s
		}()}, "reserved capacity"},
		{"overlapping cores", one(mod(bundle("a", 1, 1, "n1"), pin(0, 1)), mod(bundle("b", 1, 1, "n1"), pin(1, 2))), "core 1 pinned by both"},
		{"core beyond the node", one(mod(bundle("a", 1, 1, "n1"), pin(4))), "outside 0..3"},
		{"shared exclusive GPU", one(mod(bundle("a", 1, 1, "n1"), exclusive), mod(bundle("b", 1, 1, "n1"), exclusive)),
			"exclusive GPU 0 held by both"},
		{"exclusive GPU also shared", one(mod(bundle("a", 1, 1, "n1"), exclusive),
			mod(bundle("b", 1, 1, "n1"), func(b *api.Bundle) { b.Replicas[0].Jobs[0].GPU = &api.GPUShare{Index: 0, Capacity: 0.5} })),
			"also shared"},
		{"placed job not in the spec", one(mod(bundle("a", 1, 1, "n1"), func(b *api.Bundle) { b.Replicas[0].Jobs[0].Name = "x" })),
			"has no job"},
		{"sample with an error is skipped", []workload.Sample{func() workload.Sample {
			s := sample(0, 10, false, bundle("a", 9, 1, "n1"))
			s.Error = "timeout"
			return s
		}()}, ""},
	}
}

func replicaCases() []placementCase {
	sameCloud := func(b *api.Bundle) { b.Resilience.SameCloud = api.Forbid }
	return []placementCase{
		{"two primaries", one(mod(bundle("a", 1, 1, "n1", "n2"), func(b *api.Bundle) { b.Replicas[1].Role = api.RolePrimary })),
			"2 primaries"},
		{"placed without primary first", one(mod(bundle("a", 1, 1, "n1", "n2"), func(b *api.Bundle) {
			b.Replicas[0].Role, b.Replicas[1].Role = api.RoleBackup, api.RolePrimary
		})), "primary at replicas[1]"},
		{"backup on the primary's node", one(bundle("a", 1, 1, "n1", "n1")), "shares node n1"},
		{"backup on the primary's node, degraded", one(mod(bundle("a", 1, 1, "n1", "n1"), func(b *api.Bundle) {
			b.State, b.Degradations = api.StateDegraded, []api.Degradation{{Code: DegradeBackupSameNode}}
		})), ""},
		{"backup in the primary's az", one(mod(bundle("a", 1, 1, "n1", "n4"), func(b *api.Bundle) { b.Resilience.SameAz = api.Forbid })),
			"shares az az-1"},
		{"backup in the primary's cloud", one(mod(bundle("a", 1, 1, "n1", "n2"), sameCloud)), "shares cloud cloud-a"},
		{"backup in the primary's cloud, degraded", one(mod(bundle("a", 1, 1, "n1", "n2"), func(b *api.Bundle) {
			sameCloud(b)
			b.Degradations = []api.Degradation{{Code: DegradeBackupSameCloud}}
		})), ""},
		{"wrong degradation does not excuse", one(mod(bundle("a", 1, 1, "n1", "n1"), func(b *api.Bundle) {
			b.Degradations = []api.Degradation{{Code: DegradeBackupSameCloud}}
		})), "shares node n1"},
	}
}

func epochCases() []placementCase {
	return []placementCase{
		{"epoch goes back", []workload.Sample{
			sample(0, 10, false, bundle("a", 1, 2, "n1")), sample(20, 30, false, bundle("a", 1, 1, "n2"))}, "epoch 1 went back from 2"},
		{"epoch goes back in overlapping samples", []workload.Sample{
			sample(0, 25, false, bundle("a", 1, 2, "n1")), sample(20, 30, false, bundle("a", 1, 1, "n2"))}, ""},
		{"epoch goes back on a stale sample", []workload.Sample{
			sample(0, 10, false, bundle("a", 1, 2, "n1")), sample(20, 30, true, bundle("a", 1, 1, "n2"))}, ""},
		{"epoch moves forward", []workload.Sample{
			sample(0, 10, false, bundle("a", 1, 1, "n1")), sample(20, 30, false, bundle("a", 1, 2, "n2"))}, ""},
		{"bundle gone later", []workload.Sample{
			sample(0, 10, false, bundle("a", 1, 2, "n1")), sample(20, 30, false)}, ""},
	}
}

func TestPlacement(t *testing.T) {
	cases := append(append(ledgerCases(), replicaCases()...), epochCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Placement(tc.samples)
			assertResult(t, res, tc.want)
			if want := len(tc.samples); tc.want == "" && tc.name != "sample with an error is skipped" && res.Checked != want {
				t.Errorf("Checked = %d, want %d", res.Checked, want)
			}
		})
	}
}
