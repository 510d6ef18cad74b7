package leader

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// gatedPool has a small plain type, a medium type tainted "spot", and a
// large type labelled accel=t4 and tainted "gpu".
func gatedPool() fsm.Pool {
	p := planPool("e", 0, 0)
	p.InstanceTypes = []fsm.InstanceType{
		{Name: "small", TotalCapacity: 2000, TotalCores: 2},
		{Name: "medium", TotalCapacity: 4000, TotalCores: 4, Taints: []string{"spot"}},
		{Name: "large", TotalCapacity: 8000, TotalCores: 8, Labels: map[string]string{"accel": "t4"}, Taints: []string{"gpu"}},
	}
	return p
}

// gatedBundle records an unplaceable one-job bundle with these rules.
func (r *fsmRig) gatedBundle(id string, capacity int64, tolerations, constraints []string) {
	r.t.Helper()
	spec := fsm.BundleSpec{ID: id, Pool: "e", Jobs: []fsm.Job{{Name: "a", Requirements: ledger.Request{Capacity: capacity},
		NodeRules: &fsm.NodeRules{Tolerations: tolerations, Constraints: constraints}}}}
	r.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
	r.ok(fsm.ApplyPlanType, &fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{
		{BundleID: id, Explain: &fsm.Explain{Filtered: map[string]int{}}}}}}})
}

// TestPlannerHonoursTypeLabelsAndTaints: a bundle spawns only a type whose
// taints it tolerates and on whose labels its constraints hold, the
// smallest such; when none does, nothing is spawned and the bundle is
// blocked at stage instanceType with the job and each type's reason.
func TestPlannerHonoursTypeLabelsAndTaints(t *testing.T) {
	accel := []string{`node.labels.accel == "t4"`}
	cases := []struct {
		name        string
		capacity    int64
		tolerations []string
		constraints []string
		wantType    string   // "" = nothing spawned
		wantDetail  []string // in the blocked detail
	}{
		{"plain fits the smallest plain type", 1000, nil, nil, "small", nil},
		{"too big for small, medium is tainted: large is tainted too", 3000, nil, nil, "",
			[]string{"no 4 nodes of the instance types of pool e would let the bundle fit (ruled out: ",
				`medium: taint "spot" is not tolerated for job a`, `large: taint "gpu" is not tolerated for job a`}},
		{"tolerating spot gets medium", 3000, []string{"spot"}, nil, "medium", nil},
		{"tolerating spot, small is still smallest", 1000, []string{"spot"}, nil, "small", nil},
		{"needs the label: large, when it tolerates gpu", 1000, []string{"gpu"}, accel, "large", nil},
		{"needs the label, does not tolerate gpu", 1000, nil, accel, "",
			[]string{"job a fits no instance type of pool e (", `small: constraint "node.labels.accel == \"t4\"" fails on its labels`, `large: taint "gpu" is not tolerated`}},
		{"a label no type has", 1000, []string{"gpu", "spot"}, []string{`node.labels.accel == "a100"`}, "",
			[]string{`large: constraint "node.labels.accel == \"a100\"" does not hold on its labels`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFSMRig(t)
			r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: gatedPool()})
			r.gatedBundle("b1", tc.capacity, tc.tolerations, tc.constraints)
			plan := r.plan(0)
			if tc.wantType != "" {
				if len(plan.spawns) != 1 || plan.spawns[0].InstanceType.Name != tc.wantType || len(plan.blocked) != 0 {
					t.Fatalf("spawns %+v blocked %v, want one %s", plan.spawns, plan.blocked, tc.wantType)
				}
				return
			}
			if len(plan.spawns) != 0 || len(plan.blocked) != 1 {
				t.Fatalf("spawns %+v blocked %v, want nothing spawned and b1 blocked", plan.spawns, plan.blocked)
			}
			for k, ids := range plan.blocked {
				if k.stage != fsm.StageInstanceType || len(ids) != 1 || ids[0] != "b1" {
					t.Fatalf("blocked %+v %v", k, ids)
				}
				for _, want := range tc.wantDetail {
					if !strings.Contains(k.detail, want) {
						t.Errorf("detail %q lacks %q", k.detail, want)
					}
				}
			}
		})
	}
}

// TestPlannerSpawningGatedNodeCovers: a spawning node of a labelled,
// tainted type covers the demand it was made for (the simulation gives it
// its type's labels and taints), before and after it registers bare.
func TestPlannerSpawningGatedNodeCovers(t *testing.T) {
	r := newFSMRig(t)
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: gatedPool()})
	r.gatedBundle("b1", 1000, []string{"gpu"}, []string{`node.labels.accel == "t4"`})
	first := r.plan(0)
	if len(first.spawns) != 1 {
		t.Fatalf("first plan: %+v", first.spawns)
	}
	sp := first.spawns[0]
	r.ok(fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Spawn: *sp})
	if again := r.plan(0); len(again.spawns) != 0 {
		t.Fatalf("planned %d more spawns for demand a spawning gated node covers", len(again.spawns))
	}
	r.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{ID: sp.NodeID, Pool: "e", TotalCapacity: 8000, TotalCores: 8}})
	n := r.f.State().Node(sp.NodeID)
	if n.Labels["accel"] != "t4" || len(n.Taints) != 1 || n.Taints[0] != "gpu" {
		t.Fatalf("a bare worker of type large registered as %+v", n)
	}
	if again := r.plan(0); len(again.spawns) != 0 {
		t.Fatalf("planned %d spawns while the gated node is registering", len(again.spawns))
	}
}

// TestGateDetailIsBounded: many types with long reasons still give a
// detail the FSM accepts.
func TestGateDetailIsBounded(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 0)
	p.InstanceTypes = nil
	for i := range 64 {
		p.InstanceTypes = append(p.InstanceTypes, fsm.InstanceType{Name: strings.Repeat("t", 60) + string(rune('A'+i%26)) + string(rune('a'+i/26)),
			TotalCapacity: 8000, Taints: []string{strings.Repeat("x", 60)}})
	}
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	r.gatedBundle("b1", 1000, nil, nil)
	plan := r.plan(0)
	for k := range plan.blocked {
		if len(k.detail) > maxGateDetail || !strings.HasSuffix(k.detail, "...") {
			t.Fatalf("detail of %d bytes: %q", len(k.detail), k.detail)
		}
	}
	if len(plan.blocked) != 1 {
		t.Fatalf("blocked %v", plan.blocked)
	}
}

// TestPlannerBlocksAtScopeCaps: a bundle that the cluster's or its pool's
// cap group's caps cannot take gets no node, and its explain names the cap.
func TestPlannerBlocksAtScopeCaps(t *testing.T) {
	cases := []struct {
		name   string
		group  string
		caps   fsm.ClusterCaps
		stage  string
		detail string
	}{
		{"cluster", "", fsm.ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 1000}}, ledger.DimClusterCaps, "cluster capacity: need 1500m, 1000m free of cap 1000m"},
		{"group", "rack", fsm.ClusterCaps{Groups: map[string]ledger.PoolCaps{"rack": {MaxCores: 1}}}, ledger.DimGroupCaps, "cap group rack cores: need 2, 1 free of cap 1"},
		{"another group's caps do not matter", "", fsm.ClusterCaps{Groups: map[string]ledger.PoolCaps{"rack": {MaxCores: 1}}}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFSMRig(t)
			p := gatedPool()
			p.CapGroup = tc.group
			r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
			spec := fsm.BundleSpec{ID: "b1", Pool: "e", Jobs: []fsm.Job{{Name: "a", Requirements: ledger.Request{Capacity: 1500, Cores: 2}}}}
			r.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
			// Caps set after the create: validation refuses a job no cap
			// could ever take, so lowered caps are how such a bundle exists.
			r.ok(fsm.SetCapsType, &fsm.SetCapsRequest{Caps: tc.caps})
			r.ok(fsm.ApplyPlanType, &fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{
				{BundleID: "b1", Explain: &fsm.Explain{Filtered: map[string]int{}}}}}}})
			plan := r.plan(0)
			if tc.stage == "" {
				if len(plan.spawns) != 1 || len(plan.blocked) != 0 {
					t.Fatalf("spawns %+v blocked %v, want one spawn", plan.spawns, plan.blocked)
				}
				return
			}
			want := blocked{stage: tc.stage, detail: tc.detail}
			if len(plan.spawns) != 0 || len(plan.blocked[want]) != 1 {
				t.Fatalf("spawns %+v blocked %v, want b1 under %+v", plan.spawns, plan.blocked, want)
			}
		})
	}
}
