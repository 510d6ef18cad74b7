package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

func samplePoolStatus() api.PoolStatus {
	return api.PoolStatus{
		Pool: "burst", Kind: api.PoolElastic, MaxNodes: 4, Warm: 1, Provisioned: 3,
		Counts: map[string]int{api.LifecycleReady: 1, api.LifecycleIdle: 1, api.LifecycleSpawning: 1,
			api.LifecycleDraining: 0, api.LifecycleUnavailable: 0},
		Nodes: []api.PoolNodeStatus{
			{NodeID: "burst-1", State: api.LifecycleReady, Status: api.NodeReady, InstanceType: "c8", RequestID: "r1"},
			{NodeID: "burst-2", State: api.LifecycleIdle, Status: api.NodeReady, InstanceType: "c8", RequestID: "r2",
				Since: time.Now().Add(-3 * time.Minute)},
			{NodeID: "burst-3", State: api.LifecycleSpawning, InstanceType: "c8", RequestID: "r3"},
		},
	}
}

// TestPoolStatus: one pool or all, as tables of counts and nodes, or as the
// API's JSON; an unknown pool exits "not found".
func TestPoolStatus(t *testing.T) {
	f := newFake(t)
	live := api.PoolStatus{Pool: "live", Kind: api.PoolCluster, Counts: map[string]int{api.LifecycleReady: 2}}
	f.reply("GET /v1/pools", http.StatusOK, []api.Pool{{Name: "burst"}, {Name: "live"}})
	f.reply("GET /v1/pools/burst/status", http.StatusOK, samplePoolStatus())
	f.reply("GET /v1/pools/live/status", http.StatusOK, live)
	f.reply("GET /v1/pools/nope/status", http.StatusNotFound, api.ErrorBody{Error: &api.Error{Code: api.CodeNotFound, Message: `pool "nope" not found`}})

	r := runCLI(t, f.srv.URL, "", "pool", "status")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []cellWant{
		{"KIND", "burst", "elastic"}, {"READY", "burst", "1"}, {"IDLE", "burst", "1"}, {"SPAWNING", "burst", "1"},
		{"READY", "live", "2"}, {"SPAWNING", "live", "0"},
		{"STATE", "burst-3", "spawning"}, {"STATUS", "burst-3", "-"}, {"INSTANCE TYPE", "burst-2", "c8"},
		{"REQUEST", "burst-1", "r1"}, {"SINCE", "burst-2", "3m ago"},
	} {
		if got := cell(t, r.stdout, w.col, w.row); got != w.value {
			t.Errorf("%s of %s = %q, want %q\n%s", w.col, w.row, got, w.value, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "Pool burst (minNodes 0, maxNodes 4, warm 1; 3 provisioned cluster-wide)") {
		t.Errorf("no elastic pool header:\n%s", r.stdout)
	}

	r = runCLI(t, f.srv.URL, "", "pool", "status", "burst", "--json")
	var got api.PoolStatus
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || got.Pool != "burst" || len(got.Nodes) != 3 || got.Counts[api.LifecycleSpawning] != 1 {
		t.Fatalf("--json: %+v %v\n%s", got, err, r.stdout)
	}

	if r := runCLI(t, f.srv.URL, "", "pool", "status", "nope"); r.code != exitNotFound || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("unknown pool: exit %d, stderr %q", r.code, r.stderr)
	}
}
