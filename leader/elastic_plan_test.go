package leader

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
	"github.com/amserver/amserver/scheduler"
)

// unplaceable creates a bundle and records a failed placement, as the
// placer would.
func (r *fsmRig) unplaceable(id, pool string, capacity int64, jobs int) {
	r.t.Helper()
	spec := fsm.BundleSpec{ID: id, Pool: pool}
	for i := range jobs {
		spec.Jobs = append(spec.Jobs, fsm.Job{Name: string(rune('a' + i)), Requirements: ledger.Request{Capacity: capacity}})
	}
	if jobs > 1 {
		spec.Jobs[0].SeparateFrom = []string{spec.Jobs[1].Name}
	}
	r.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
	r.ok(fsm.ApplyPlanType, &fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{
		{BundleID: id, Explain: &fsm.Explain{Filtered: map[string]int{}}}}}}})
}

func (r *fsmRig) plan(maxTotal int) *demandPlan {
	st := r.f.State()
	problem := func(p *fsm.Pool) string { return allowAll(p.Provisioner) }
	return newPlanner(st, scheduler.NewEngine(scheduler.Options{}), elasticPools(st), maxTotal, problem).run()
}

func planPool(name string, maxNodes, warm int) fsm.Pool {
	return fsm.Pool{Name: name, Kind: fsm.PoolElastic, Scoring: fsm.ScoringBinpack, MaxNodes: maxNodes, Warm: warm,
		InstanceTypes: []fsm.InstanceType{
			{Name: "large", TotalCapacity: 8000, TotalCores: 8},
			{Name: "small", TotalCapacity: 2000, TotalCores: 2},
			{Name: "medium", TotalCapacity: 4000, TotalCores: 4},
		},
		Provisioner: &fsm.Provisioner{Command: []string{"/bin/true"}}}
}

// TestPlannerPicksSmallestFittingType: one spawn per bundle, of the
// smallest instance type that fits it; a bundle whose jobs must be apart
// gets two nodes.
func TestPlannerPicksSmallestFittingType(t *testing.T) {
	r := newFSMRig(t)
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: planPool("e", 0, 0)})
	r.unplaceable("b1", "e", 3000, 1)
	r.unplaceable("b2", "e", 1500, 2)
	plan := r.plan(0)
	var types []string
	for _, sp := range plan.spawns {
		if sp.Reason != fsm.SpawnForDemand || sp.Pool != "e" || !strings.HasPrefix(sp.NodeID, "e-") {
			t.Fatalf("unexpected spawn %+v", sp)
		}
		types = append(types, sp.InstanceType.Name+":"+strings.Join(sp.Demand, ","))
	}
	if got := strings.Join(types, " "); got != "medium:b1 small:b2 small:b2" {
		t.Fatalf("spawns %q, want medium for b1 and two small for b2", got)
	}
	if len(plan.blocked) != 0 {
		t.Fatalf("nothing should be blocked: %v", plan.blocked)
	}
}

// TestPlannerCountsSpawningNodes: demand a spawning node covers is not
// provisioned again, which is what a new leader sees in the state.
func TestPlannerCountsSpawningNodes(t *testing.T) {
	r := newFSMRig(t)
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: planPool("e", 0, 0)})
	r.unplaceable("b1", "e", 3000, 1)
	first := r.plan(0)
	if len(first.spawns) != 1 {
		t.Fatalf("first plan: %d spawns, want 1", len(first.spawns))
	}
	r.ok(fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Spawn: *first.spawns[0]})
	if again := r.plan(0); len(again.spawns) != 0 {
		t.Fatalf("planned %d more spawns for demand a spawning node covers", len(again.spawns))
	}
	// Registered but not yet ready in gossip: still covers the demand.
	sp := first.spawns[0]
	r.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{ID: sp.NodeID, Pool: "e", TotalCapacity: 4000, TotalCores: 4}})
	if again := r.plan(0); len(again.spawns) != 0 {
		t.Fatalf("planned %d spawns while the provisioned node is registering", len(again.spawns))
	}
}

// TestPlannerBlocksAtCaps: beyond maxNodes or the global cap nothing is
// planned and the bundle is named under the cap that stopped it.
func TestPlannerBlocksAtCaps(t *testing.T) {
	tests := []struct {
		name      string
		maxNodes  int
		maxTotal  int
		wantStage string
		wantText  string
	}{
		{"pool", 1, 0, fsm.StagePoolMaxNodes, "pool e at maxNodes 1 (0 ready, 0 idle, 0 draining, 0 unavailable, 1 spawning)"},
		{"global", 0, 1, fsm.StageMaxProvisionedNodes, "cluster at max provisioned nodes 1 (0 registered, 1 spawning, 0 being given back)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newFSMRig(t)
			r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: planPool("e", tc.maxNodes, 0)})
			r.unplaceable("b1", "e", 3000, 1)
			r.unplaceable("b2", "e", 3000, 1)
			plan := r.plan(tc.maxTotal)
			if len(plan.spawns) != 1 || plan.spawns[0].Demand[0] != "b1" {
				t.Fatalf("spawns %+v, want one for b1", plan.spawns)
			}
			want := blocked{stage: tc.wantStage, detail: tc.wantText}
			if ids := plan.blocked[want]; len(ids) != 1 || ids[0] != "b2" {
				t.Fatalf("blocked %v, want b2 under %+v", plan.blocked, want)
			}
		})
	}
}

// TestPlannerWarmPool: an empty pool gets its warm nodes (first instance
// type) and minNodes, and no more once they are spawning.
func TestPlannerWarmPool(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 2)
	p.MinNodes = 3
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	plan := r.plan(0)
	if len(plan.spawns) != 3 {
		t.Fatalf("%d spawns, want 3 (minNodes)", len(plan.spawns))
	}
	for _, sp := range plan.spawns {
		if sp.InstanceType.Name != "large" {
			t.Fatalf("warm node of type %s, want the first listed (large)", sp.InstanceType.Name)
		}
		r.ok(fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Spawn: *sp})
	}
	if again := r.plan(0); len(again.spawns) != 0 {
		t.Fatalf("planned %d more warm nodes", len(again.spawns))
	}
}

// TestPlannerNoProvisioner: an elastic pool without a provisioner says so.
func TestPlannerNoProvisioner(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 0)
	p.Provisioner = nil
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	r.unplaceable("b1", "e", 3000, 1)
	plan := r.plan(0)
	if len(plan.spawns) != 0 || len(plan.blocked[blocked{stage: fsm.StageProvisioner, detail: "pool e has no provisioner"}]) != 1 {
		t.Fatalf("plan %+v", plan)
	}
}

// TestPlannerPicksTypeWithRuntime: a job that needs a runtime gets an
// instance type that runs it, even when a smaller one would fit its size.
func TestPlannerPicksTypeWithRuntime(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 0)
	p.InstanceTypes[0].Runtimes = []string{"exec", "docker"} // large
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	spec := fsm.BundleSpec{ID: "b1", Pool: "e", Jobs: []fsm.Job{{Name: "a", Requirements: ledger.Request{Capacity: 1000},
		Launch: fsm.Launch{Kind: fsm.LaunchLegacy, Job: &fsm.LegacyJob{Driver: fsm.DriverDocker, Image: "enc"}}}}}
	r.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
	r.ok(fsm.ApplyPlanType, &fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{
		{BundleID: "b1", Explain: &fsm.Explain{Filtered: map[string]int{}}}}}}})
	plan := r.plan(0)
	if len(plan.spawns) != 1 || plan.spawns[0].InstanceType.Name != "large" {
		t.Fatalf("spawns %+v: want one large (the type with docker)", plan.spawns)
	}
}

// TestPlannerPicksTypeWithMemory: a job that requests memory gets an
// instance type with enough of it, even when a smaller one would fit its
// capacity (one that no type could hold is refused when submitted:
// unsatisfiableMemory).
func TestPlannerPicksTypeWithMemory(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 0)
	p.InstanceTypes[0].TotalMemoryMiB = 32768 // large
	p.InstanceTypes[1].TotalMemoryMiB = 4096  // small
	p.InstanceTypes[2].TotalMemoryMiB = 8192  // medium
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	spec := fsm.BundleSpec{ID: "b1", Pool: "e", Jobs: []fsm.Job{{Name: "a", Requirements: ledger.Request{Capacity: 1000, MemoryMiB: 16384}}}}
	r.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
	r.ok(fsm.ApplyPlanType, &fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{
		{BundleID: "b1", Explain: &fsm.Explain{Filtered: map[string]int{}}}}}}})
	plan := r.plan(0)
	if len(plan.spawns) != 1 || plan.spawns[0].InstanceType.Name != "large" || strings.Join(plan.spawns[0].Demand, ",") != "b1" {
		t.Fatalf("spawns %+v: want one large (the type with 16 GiB free) for b1", plan.spawns)
	}
}
