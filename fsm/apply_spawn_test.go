package fsm

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func elasticPool(name string, maxNodes int) Pool {
	p := Pool{Name: name, Kind: PoolElastic, MaxNodes: maxNodes,
		InstanceTypes: []InstanceType{{Name: "small", TotalCapacity: 2000, TotalCores: 2}, {Name: "big", TotalCapacity: 8000, TotalCores: 8}},
		Provisioner:   &Provisioner{Command: []string{"/bin/true"}}}
	NormalizePool(&p)
	return p
}

func testSpawn(id, node, pool, typ string) Spawn {
	return Spawn{ID: id, NodeID: node, Pool: pool, InstanceType: InstanceType{Name: typ}, Reason: SpawnForDemand}
}

// TestSpawnCaps: a create beyond the pool's maxNodes or the leader's global
// cap is refused and changes nothing; nodes that registered count once.
func TestSpawnCaps(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: elasticPool("e", 2)})
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: elasticPool("f", 0)})
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r1", "e-1", "e", "small"), Now: 1})
	h.ok(RegisterNodeType, &RegisterNodeRequest{Node: Node{ID: "e-1", Pool: "e", TotalCapacity: 2000, TotalCores: 2}})
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r2", "e-2", "e", "big"), Now: 2})
	if c := h.fsm.State().CountPool("e"); c.Nodes != 1 || c.Spawning != 1 {
		t.Fatalf("pool count %+v, want 1 node and 1 spawning", c)
	}
	before := stateHash(t, h.fsm)
	res := h.apply(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r3", "e-3", "e", "small"), Now: 3})
	if !errors.Is(res.Err, ErrConflict) || !strings.Contains(res.Err.Error(), "maxNodes 2 (0 ready, 0 idle, 0 draining, 1 unavailable, 1 spawning)") {
		t.Fatalf("third spawn in a pool of maxNodes 2: %v", res.Err)
	}
	res = h.apply(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r4", "f-1", "f", "small"), MaxProvisioned: 2, Now: 3})
	if !errors.Is(res.Err, ErrConflict) || !strings.Contains(res.Err.Error(), "max provisioned nodes 2") {
		t.Fatalf("spawn beyond the global cap: %v", res.Err)
	}
	if stateHash(t, h.fsm) != before {
		t.Fatal("a refused spawn changed the state")
	}
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r4", "f-1", "f", "small"), MaxProvisioned: 3, Now: 3})
}

// TestSpawnLifecycle: registration links the node, a retried create is a
// no-op, idle time is recorded, deleting cordons and drains, and the delete
// removes both spawn and node.
func TestSpawnLifecycle(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: elasticPool("e", 0)})
	sp := testSpawn("r1", "e-1", "e", "small")
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: sp, Now: 10})
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: sp, Now: 11}) // a new leader's retry
	if n := len(h.fsm.State().Spawns("e")); n != 1 {
		t.Fatalf("%d spawns after a retried create, want 1", n)
	}
	if got := h.fsm.State().Spawn("r1"); got.InstanceType.TotalCapacity != 2000 || got.State != SpawnSpawning || got.CreateTime != 10 {
		t.Fatalf("spawn as created: %+v", got)
	}
	h.readyNode(Node{ID: "e-1", Pool: "e", TotalCapacity: 2000, TotalCores: 2})
	if got := h.fsm.State().Spawn("r1"); got.State != SpawnRegistered {
		t.Fatalf("spawn after registration: %s", got.State)
	}
	idle := *h.fsm.State().Spawn("r1")
	idle.IdleSince = 20
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: idle, Now: 20})
	if got := h.fsm.State().PoolStatus("e"); got.Counts[PoolNodeIdle] != 1 || got.Nodes[0].Since != 20 {
		t.Fatalf("pool status of an idle node: %+v", got)
	}
	del := *h.fsm.State().Spawn("r1")
	del.State, del.DeleteReason = SpawnDeleting, "idle"
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: del, Now: 30})
	if n := h.fsm.State().Node("e-1"); !n.Cordoned || !n.Draining {
		t.Fatalf("a node being deprovisioned must be cordoned and draining: %+v", n)
	}
	back := del
	back.State = SpawnRegistered
	if res := h.apply(UpsertSpawnType, &UpsertSpawnRequest{Spawn: back, Now: 31}); !errors.Is(res.Err, ErrInvalid) {
		t.Fatalf("deleting must be one-way: %v", res.Err)
	}
	h.ok(DeleteSpawnType, &DeleteSpawnRequest{ID: "r1", Reason: "given back", Now: 40})
	if h.fsm.State().Node("e-1") != nil || h.fsm.State().Spawn("r1") != nil {
		t.Fatal("delete left the node or the spawn behind")
	}
	if !hasEvent(h.fsm.State(), EventNodeDeprovisioned, "e-1") || !hasEvent(h.fsm.State(), EventNodeProvisioning, "e-1") {
		t.Fatalf("missing provisioning events: %+v", h.fsm.State().Events(0, 0))
	}
}

// TestSpawnTimeoutUsesCommandClock: the leader may only give up a spawn
// whose timeout passed by the clock in its command.
func TestSpawnTimeoutUsesCommandClock(t *testing.T) {
	h := newHarness(t)
	p := elasticPool("e", 0)
	p.SpawnTimeout = int64(time.Minute)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: p})
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r1", "e-1", "e", "small"), Now: 1000})
	expire := *h.fsm.State().Spawn("r1")
	expire.State, expire.DeleteReason = SpawnDeleting, SpawnTimeoutReason
	if res := h.apply(UpsertSpawnType, &UpsertSpawnRequest{Spawn: expire, Now: 1000 + int64(time.Second)}); !errors.Is(res.Err, ErrConflict) {
		t.Fatalf("early timeout: %v", res.Err)
	}
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: expire, Now: 1000 + int64(time.Minute)})
	if !hasEvent(h.fsm.State(), EventProvisionTimedOut, "e-1") {
		t.Fatal("no provisionTimedOut event")
	}
	// A node that registers after its spawn was given up takes no work.
	h.readyNode(Node{ID: "e-1", Pool: "e", TotalCapacity: 2000, TotalCores: 2})
	if n := h.fsm.State().Node("e-1"); n.Placeable() {
		t.Fatal("a late node of an abandoned spawn is placeable")
	}
}

// TestSpawnBlockedExplains: the cap becomes the nearest miss of an
// unplaceable bundle, and only of one that is unplaceable.
func TestSpawnBlockedExplains(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: elasticPool("e", 1)})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "e", testJob("j", 1000, 0))})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b2", "e", testJob("j", 1000, 0))})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{{BundleID: "b1", Explain: &Explain{Filtered: map[string]int{}}}}}}})
	req := &SpawnBlockedRequest{Bundles: []string{"b1", "b2"}, Stage: StagePoolMaxNodes, Detail: PoolCapDetail("e", 1, PoolCount{Nodes: 1})}
	h.ok(SpawnBlockedType, req)
	b1, b2 := h.fsm.State().Bundle("b1"), h.fsm.State().Bundle("b2")
	if b1.State != StateUnplaceable || b1.Explain.NearestMiss == nil || b1.Explain.NearestMiss.Stage != StagePoolMaxNodes {
		t.Fatalf("b1 explain: %+v", b1.Explain)
	}
	if b2.Explain != nil {
		t.Fatalf("pending b2 was given an explanation: %+v", b2.Explain)
	}
	idx := b1.ModifyIndex
	h.ok(SpawnBlockedType, req)
	if h.fsm.State().Bundle("b1").ModifyIndex != idx {
		t.Fatal("an unchanged explanation was written again")
	}
}

// TestSpawnsSurviveSnapshot: spawns are in snapshots (section 15) and a
// restore over a non-empty state replaces them.
func TestSpawnsSurviveSnapshot(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: elasticPool("e", 0)})
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r1", "e-1", "e", "small"), Now: 5})
	other := newHarness(t)
	other.ok(UpsertPoolType, &UpsertPoolRequest{Pool: elasticPool("e", 0)})
	other.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: testSpawn("r9", "e-9", "e", "small"), Now: 5})
	restoreInto(t, h.fsm, other.fsm)
	if stateHash(t, other.fsm) != stateHash(t, h.fsm) || other.fsm.State().Spawn("r9") != nil {
		t.Fatal("restore did not reproduce the spawns exactly")
	}
	if res := h.apply(DeletePoolType, &DeletePoolRequest{Name: "e"}); !errors.Is(res.Err, ErrInUse) {
		t.Fatalf("deleting a pool with a spawn: %v", res.Err)
	}
	if res := h.apply(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "e", Kind: PoolCluster}}); !errors.Is(res.Err, ErrInUse) {
		t.Fatalf("making a pool with a spawn a cluster pool: %v", res.Err)
	}
}

func hasEvent(st *State, typ, node string) bool {
	for _, e := range st.Events(0, 0) {
		if e.Type == typ && e.NodeID == node {
			return true
		}
	}
	return false
}

// TestSpawnProfileOnRegistration: a provisioned node registers with its
// instance type's labels and taints, also when the worker was started
// without them and when it registers again; a node of another pool, or
// one no spawn asked for, keeps only its own.
func TestSpawnProfileOnRegistration(t *testing.T) {
	h := newHarness(t)
	pool := elasticPool("e", 0)
	pool.InstanceTypes = append(pool.InstanceTypes, InstanceType{Name: "gpu", TotalCapacity: 2000,
		Labels: map[string]string{"accel": "t4", "zone": "z1"}, Taints: []string{"gpu"}})
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: pool})
	sp := testSpawn("r1", "e-1", "e", "gpu") // the FSM copies the pool's type
	h.ok(UpsertSpawnType, &UpsertSpawnRequest{Spawn: sp, Now: 1})
	cases := []struct {
		name       string
		node       Node
		wantLabels map[string]string
		wantTaints []string
	}{
		{"bare worker", Node{ID: "e-1", Pool: "e", TotalCapacity: 2000},
			map[string]string{"accel": "t4", "zone": "z1"}, []string{"gpu"}},
		{"re-registration with labels of its own", Node{ID: "e-1", Pool: "e", TotalCapacity: 2000,
			Labels: map[string]string{"zone": "z9", "rack": "r1"}, Taints: []string{"gpu", "spot"}},
			map[string]string{"accel": "t4", "zone": "z1", "rack": "r1"}, []string{"gpu", "spot"}},
		{"an unrelated node", Node{ID: "n-1", Pool: "e", TotalCapacity: 2000, Labels: map[string]string{"rack": "r2"}},
			map[string]string{"rack": "r2"}, nil},
		{"the spawn's node id in another pool", Node{ID: "e-1", Pool: "other", TotalCapacity: 2000}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := h.apply(RegisterNodeType, &RegisterNodeRequest{Node: tc.node, Now: 2})
			if tc.node.Pool == "other" {
				if res.Err == nil {
					got := h.fsm.State().Node(tc.node.ID)
					if len(got.Taints) != 0 || got.Labels["accel"] != "" {
						t.Fatalf("a node outside the spawn's pool got its profile: %+v", got)
					}
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			got := h.fsm.State().Node(tc.node.ID)
			if !maps.Equal(got.Labels, tc.wantLabels) || !slices.Equal(got.Taints, tc.wantTaints) {
				t.Fatalf("labels %v taints %v, want %v %v", got.Labels, got.Taints, tc.wantLabels, tc.wantTaints)
			}
		})
	}
	if got := h.fsm.State().Spawn("r1").InstanceType.Taints; !slices.Equal(got, []string{"gpu"}) {
		t.Fatalf("registration changed the spawn's type: %v", got)
	}
}
