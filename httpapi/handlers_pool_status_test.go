package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// TestPoolStatus: a spawning node is listed before it registers, a
// registered one by its state, and an unknown pool is 404.
func TestPoolStatus(t *testing.T) {
	e := leaderEnv(t)
	pool := fsm.Pool{Name: "burst", Kind: fsm.PoolElastic, MaxNodes: 3, Warm: 1,
		InstanceTypes: []fsm.InstanceType{{Name: "c8", TotalCapacity: 8000, TotalCores: 8}}}
	fsm.NormalizePool(&pool)
	e.b.mustApply(t, fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: pool})
	created := time.Unix(1_800_000_000, 0).UnixNano()
	for _, id := range []string{"1", "2"} {
		e.b.mustApply(t, fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Now: created, Spawn: fsm.Spawn{
			ID: "req-" + id, NodeID: "burst-" + id, Pool: "burst", InstanceType: fsm.InstanceType{Name: "c8"}, Reason: fsm.SpawnForWarm}})
	}
	e.b.mustApply(t, fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{ID: "burst-1", Pool: "burst", TotalCapacity: 8000, TotalCores: 8}})
	e.b.mustApply(t, fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: "burst-1", Status: fsm.NodeReady})

	ps, meta, err := e.c.PoolStatus(t.Context(), "burst", nil)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Index == 0 || ps.Kind != api.PoolElastic || ps.MaxNodes != 3 || ps.Warm != 1 || ps.Provisioned != 2 {
		t.Fatalf("status %+v (index %d)", ps, meta.Index)
	}
	want := map[string]int{api.LifecycleReady: 0, api.LifecycleIdle: 1, api.LifecycleSpawning: 1, api.LifecycleDraining: 0, api.LifecycleUnavailable: 0}
	for k, v := range want {
		if ps.Counts[k] != v {
			t.Fatalf("counts %v, want %v", ps.Counts, want)
		}
	}
	if len(ps.Nodes) != 2 || ps.Nodes[0].NodeID != "burst-1" || ps.Nodes[0].Status != api.NodeReady || ps.Nodes[0].RequestID != "req-1" ||
		ps.Nodes[1].State != api.LifecycleSpawning || ps.Nodes[1].Status != "" || !ps.Nodes[1].Since.Equal(time.Unix(1_800_000_000, 0)) {
		t.Fatalf("nodes %+v", ps.Nodes)
	}
	resp, body := e.do(http.MethodGet, "/v1/pools/nope/status", nil)
	if resp.StatusCode != http.StatusNotFound || errorBody(t, body).Code != api.CodeNotFound {
		t.Fatalf("unknown pool: %d %s", resp.StatusCode, body)
	}
}
