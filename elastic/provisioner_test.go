package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

func sampleSpawn() *fsm.Spawn {
	return &fsm.Spawn{ID: "r1", NodeID: "e-1", Pool: "e", InstanceType: fsm.InstanceType{
		Name: "gpu", TotalCapacity: 2500, TotalCores: 4, TotalMemoryMiB: 16384,
		GPUs:         []ledger.GPU{{Index: 0, Model: "t4", Capacity: 1000}},
		Capabilities: []ledger.Capability{{Name: "nic", Count: 2, Attributes: map[string]string{"speed": "25g", "a": "b"}}},
		Labels:       map[string]string{"zone": "z1", "accel": "t4"},
		Taints:       []string{"gpu", "spot"},
	}}
}

// TestExecProvisionerEnvironment: the command gets the request as JSON and
// as one variable per field, in the worker's flag syntax.
func TestExecProvisionerEnvironment(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	script := filepath.Join(dir, "p.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv | grep ^AMSERVER_PROVISION_ | sort > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := newProvisioner(&fsm.Provisioner{Command: []string{script}}, nil, Policy{AllowExec: true})
	req := provisionRequest(ProvisionCreate, sampleSpawn(), []string{"10.0.0.1:7072", "10.0.0.2:7072"}, []string{"10.0.0.1:7070"})
	if err := p.Create(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := string(raw)
	for _, want := range []string{
		"AMSERVER_PROVISION_OP=create", "AMSERVER_PROVISION_REQUEST_ID=r1", "AMSERVER_PROVISION_POOL=e",
		"AMSERVER_PROVISION_INSTANCE_TYPE=gpu", "AMSERVER_PROVISION_NODE_ID=e-1",
		"AMSERVER_PROVISION_JOIN=10.0.0.1:7072,10.0.0.2:7072", "AMSERVER_PROVISION_SERVERS=10.0.0.1:7070",
		"AMSERVER_PROVISION_CAPACITY=2.5", "AMSERVER_PROVISION_CORES=4", "AMSERVER_PROVISION_GPUS=0:t4:1",
		"AMSERVER_PROVISION_MEMORY_MIB=16384",
		"AMSERVER_PROVISION_CAPABILITIES=nic:2:a=b,speed=25g",
		"AMSERVER_PROVISION_LABELS=accel=t4 zone=z1", "AMSERVER_PROVISION_TAINTS=gpu spot",
	} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("environment lacks %s:\n%s", want, env)
		}
	}
	_, js, _ := strings.Cut(env, "AMSERVER_PROVISION_REQUEST=")
	js, _, _ = strings.Cut(js, "\n")
	var got ProvisionRequest
	if err := json.Unmarshal([]byte(js), &got); err != nil || got.RequestID != "r1" || got.Inventory.TotalCapacity != 2.5 ||
		got.Inventory.TotalMemoryMiB != 16384 ||
		len(got.Inventory.GPUs) != 1 || got.Op != ProvisionCreate || got.Inventory.Labels["accel"] != "t4" ||
		strings.Join(got.Inventory.Taints, ",") != "gpu,spot" {
		t.Fatalf("AMSERVER_PROVISION_REQUEST %q: %+v %v", js, got, err)
	}
}

// TestExecProvisionerFailures: a non-zero exit is an error quoting the
// output; a hanging command is killed, with everything it started, when
// the call's context ends.
func TestExecProvisionerFailures(t *testing.T) {
	dir := t.TempDir()
	failing := newProvisioner(&fsm.Provisioner{Command: []string{"sh", "-c", "echo no capacity in zone >&2; exit 3"}}, nil, Policy{AllowExec: true})
	err := failing.Create(t.Context(), provisionRequest(ProvisionCreate, sampleSpawn(), nil, nil))
	if err == nil || !strings.Contains(err.Error(), "no capacity in zone") {
		t.Fatalf("failing command: %v", err)
	}
	marker := filepath.Join(dir, "child-alive")
	hang := newProvisioner(&fsm.Provisioner{Command: []string{"sh", "-c",
		"(sleep 2; touch " + marker + ") & sleep 600"}}, nil, Policy{AllowExec: true})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err = hang.Delete(ctx, provisionRequest(ProvisionDelete, sampleSpawn(), nil, nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging command: %v", err)
	}
	time.Sleep(3 * time.Second) // past the child's own sleep: had it survived, the marker would exist
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a process the hanging command started survived the kill")
	}
}

// TestHTTPProvisioner: create is POST, delete is DELETE {url}/{node};
// 409 on create and 404 on delete are success, other 4xx permanent.
func TestHTTPProvisioner(t *testing.T) {
	var status atomic.Int32
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		last.Store(r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("Idempotency-Key") + " " + string(body))
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte("answer"))
	}))
	defer srv.Close()
	p := newProvisioner(&fsm.Provisioner{URL: srv.URL + "/nodes/"}, srv.Client(), Policy{AllowHosts: []string{"127.0.0.1"}})
	// A query in the URL stays the query of both calls.
	pq := newProvisioner(&fsm.Provisioner{URL: srv.URL + "/nodes?region=eu"}, srv.Client(), Policy{AllowHosts: []string{"127.0.0.1"}})
	create := provisionRequest(ProvisionCreate, sampleSpawn(), nil, nil)
	del := provisionRequest(ProvisionDelete, sampleSpawn(), nil, nil)
	tests := []struct {
		name      string
		status    int
		call      func() error
		wantReq   string
		ok        bool
		permanent bool
	}{
		{"create", http.StatusCreated, func() error { return p.Create(t.Context(), create) }, "POST /nodes r1 {", true, false},
		{"create again", http.StatusConflict, func() error { return p.Create(t.Context(), create) }, "POST /nodes r1", true, false},
		{"create refused", http.StatusBadRequest, func() error { return p.Create(t.Context(), create) }, "POST /nodes", false, true},
		{"create unavailable", http.StatusServiceUnavailable, func() error { return p.Create(t.Context(), create) }, "POST /nodes", false, false},
		{"delete", http.StatusNoContent, func() error { return p.Delete(t.Context(), del) }, "DELETE /nodes/e-1 r1", true, false},
		{"delete gone", http.StatusNotFound, func() error { return p.Delete(t.Context(), del) }, "DELETE /nodes/e-1", true, false},
		{"delete throttled", http.StatusTooManyRequests, func() error { return p.Delete(t.Context(), del) }, "DELETE /nodes/e-1", false, false},
		{"create with query", http.StatusCreated, func() error { return pq.Create(t.Context(), create) }, "POST /nodes?region=eu r1", true, false},
		{"delete with query", http.StatusNoContent, func() error { return pq.Delete(t.Context(), del) }, "DELETE /nodes/e-1?region=eu r1", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status.Store(int32(tc.status))
			err := tc.call()
			if (err == nil) != tc.ok || errors.Is(err, errPermanent) != tc.permanent {
				t.Fatalf("status %d: err %v (permanent %v)", tc.status, err, errors.Is(err, errPermanent))
			}
			if got, _ := last.Load().(string); !strings.HasPrefix(got, tc.wantReq) {
				t.Fatalf("request %q, want prefix %q", got, tc.wantReq)
			}
		})
	}
}

// TestCommandProvisionerNeedsConsent: a write token can set a pool's
// command; a server runs it only when its operator allowed commands.
func TestCommandProvisionerNeedsConsent(t *testing.T) {
	cmd := &fsm.Provisioner{Command: []string{"/bin/true"}}
	if newProvisioner(cmd, nil, Policy{AllowHosts: []string{"p"}}) != nil {
		t.Fatal("a command provisioner runs without --elastic-allow-exec")
	}
	if why := (Policy{}).Problem(cmd); !strings.Contains(why, "--elastic-allow-exec") {
		t.Fatalf("the reason does not say how to allow it: %q", why)
	}
	if newProvisioner(cmd, nil, Policy{AllowExec: true}) == nil || newProvisioner(&fsm.Provisioner{URL: "http://p"}, nil, Policy{AllowHosts: []string{"p"}}) == nil {
		t.Fatal("allowed provisioners refused")
	}
	if (Policy{AllowExec: true}).Problem(nil) != "has no provisioner" {
		t.Fatal("a pool without a provisioner")
	}
}
