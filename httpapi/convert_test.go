package httpapi

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// The table names reads watch must exist in the FSM, or blocking queries
// would watch nothing and answer index 1 forever.
func TestTableNamesExist(t *testing.T) {
	for _, name := range []string{tableNodes, tablePools, tableBundles, tableAssignments, tableServices, tableEvents, tableKeyring, tableSpawns, tableTemplates, tableCaps} {
		if !slices.Contains(fsm.Tables, name) {
			t.Errorf("table %q is not in fsm.Tables %v", name, fsm.Tables)
		}
	}
}

// A spec survives API → FSM → API unchanged, so an identical retry built
// from a read-back compares equal.
func TestSpecRoundTrip(t *testing.T) {
	in := api.BundleSpec{
		ID: "b1", Pool: "p1", Priority: api.PriorityGold,
		Placement:  api.Placement{SameNodeDefault: true, SameAz: api.SameAzSoft},
		Resilience: &api.Resilience{Pool: "p2", SameNode: api.Forbid, SameAz: api.Allow, SameCloud: api.Forbid},
		StartAt:    "2030-01-02T03:04:05.5Z", StopAt: "2030-01-03T00:00:00Z", Tags: map[string]string{"a": "b"},
		Jobs: []api.Job{{
			Name: "enc",
			Requirements: api.Requirements{Capacity: 2.5, Cores: 2, GPUCapacity: 0.25, GPUModel: "a10",
				Capabilities: []api.CapabilityRequest{{Name: "nic", Count: 1, AttributeMatches: map[string]string{"speed": "25g"}}}},
			CoLocateWith: []string{"mux"}, Tolerations: []string{"gpu"}, Constraints: []string{`node.labels.rack != "r7"`},
			Affinities: []api.Affinity{{Expression: "true", Weight: -5}},
			Launch:     api.Launch{Driver: api.DriverExec, Command: []string{"ffmpeg"}, Env: map[string]string{"X": "1"}},
		}, {Name: "mux", Launch: api.Launch{Driver: api.DriverNone}}},
	}
	spec, problems := specFromAPI(in)
	if len(problems) != 0 {
		t.Fatalf("problems: %+v", problems)
	}
	if got := specToAPI(&spec); !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
}

func TestNodeConversion(t *testing.T) {
	n, err := nodeFromAPI("n1", api.NodeSpec{Pool: "p1", TotalCapacity: 8, TotalCores: 4,
		GPUs: []api.GPU{{Index: 1, Model: "a10", TotalCapacity: 0.5}}})
	if err != nil || n.TotalCapacity != 8000 || n.UtilizationCap != 1000 || n.GPUs[0].Capacity != 500 || n.ID != "n1" {
		t.Fatalf("node = %+v, %v", n, err)
	}
	if _, err := nodeFromAPI("n1", api.NodeSpec{Pool: "p1", TotalCapacity: math.Inf(1)}); err == nil {
		t.Fatal("infinite capacity accepted")
	}
}

// TestEffectivePriorityReadsBack: a job's band is kept, and the bundle and
// its list summary show the effective band, the highest of all.
func TestEffectivePriorityReadsBack(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	cases := []struct {
		name, bundle, job, wantOwn, wantEffective string
	}{
		{"a gold job lifts a bronze bundle", api.PriorityBronze, api.PriorityGold, api.PriorityBronze, api.PriorityGold},
		{"a bronze job under a gold bundle", api.PriorityGold, api.PriorityBronze, api.PriorityGold, api.PriorityGold},
		{"an unset bundle takes its job's band", "", api.PriorityBronze, api.PriorityBronze, api.PriorityBronze},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec(fmt.Sprintf("prio%d", i))
			spec.Priority, spec.Jobs[0].Priority = tc.bundle, tc.job
			if _, err := e.c.CreateBundle(ctx(t), spec); err != nil {
				t.Fatal(err)
			}
			got, _, err := e.c.Bundle(ctx(t), spec.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Priority != tc.wantOwn || got.EffectivePriority != tc.wantEffective || got.Jobs[0].Priority != tc.job {
				t.Fatalf("priority %q effective %q job %q", got.Priority, got.EffectivePriority, got.Jobs[0].Priority)
			}
			for s, err := range e.c.ListBundles(ctx(t), api.BundleFilter{}, api.ListOptions{}, nil) {
				if err != nil {
					t.Fatal(err)
				}
				if s.ID == spec.ID && s.EffectivePriority != tc.wantEffective {
					t.Fatalf("summary effective %q, want %q", s.EffectivePriority, tc.wantEffective)
				}
			}
		})
	}
}

// TestInstanceTypeLabelsRoundTrip: an instance type's labels and taints
// reach the FSM and read back unchanged.
func TestInstanceTypeLabelsRoundTrip(t *testing.T) {
	in := api.Pool{Name: "e", Kind: fsm.PoolElastic, Scoring: fsm.ScoringBinpack, InstanceTypes: []api.InstanceType{{
		Name: "g4", TotalCapacity: 4, TotalCores: 4,
		Labels: map[string]string{"accel": "t4"}, Taints: []string{"gpu"},
	}}}
	p, err := poolFromAPI("e", in)
	if err != nil {
		t.Fatal(err)
	}
	if it := p.InstanceTypes[0]; it.Labels["accel"] != "t4" || !slices.Equal(it.Taints, []string{"gpu"}) {
		t.Fatalf("fsm instance type %+v", it)
	}
	if out := poolToAPI(&p).InstanceTypes[0]; !reflect.DeepEqual(out, in.InstanceTypes[0]) {
		t.Fatalf("read back %+v, want %+v", out, in.InstanceTypes[0])
	}
}
