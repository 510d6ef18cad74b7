package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// fakeAPI is an httptest server answering the API endpoints a test needs
// with the real wire types, recording every request it sees.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server
	mux *http.ServeMux

	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	method, path string
	query        map[string][]string
	token        string
	body         []byte
}

func newFake(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, mux: http.NewServeMux()}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.requests = append(f.requests, recorded{method: r.Method, path: r.URL.Path, query: r.URL.Query(),
		token: r.Header.Get(api.HeaderToken), body: body})
	f.mu.Unlock()
	f.mux.ServeHTTP(w, r)
}

// on registers a handler for a Go 1.22 mux pattern ("GET /v1/bundles").
func (f *fakeAPI) on(pattern string, h http.HandlerFunc) { f.mux.HandleFunc(pattern, h) }

// reply registers a handler that always answers status with v.
func (f *fakeAPI) reply(pattern string, status int, v any) {
	f.on(pattern, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, 7, v) })
}

// fail registers a handler that answers with an API error body.
func (f *fakeAPI) fail(pattern string, status int, code, msg string, errs ...api.Finding) {
	f.on(pattern, func(w http.ResponseWriter, _ *http.Request) { writeError(w, status, code, msg, errs...) })
}

func (f *fakeAPI) seen() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// last returns the last request to path, failing the test when there is none.
func (f *fakeAPI) last(method, path string) recorded {
	f.t.Helper()
	reqs := f.seen()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].method == method && reqs[i].path == path {
			return reqs[i]
		}
	}
	f.t.Fatalf("no %s %s request; saw %v", method, path, reqs)
	return recorded{}
}

func writeJSON(w http.ResponseWriter, status int, index uint64, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	w.Header().Set(api.HeaderKnownLeader, "true")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string, errs ...api.Finding) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "0")
	}
	body := api.ErrorBody{Error: &api.Error{Code: code, Message: msg, Errors: nonNil(errs), Warnings: []api.Finding{}}}
	writeJSON(w, status, 0, body)
}

// result is one in-process run of the CLI.
type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs the command line against addr with an empty environment.
func runCLI(t *testing.T, addr, stdin string, args ...string) result {
	t.Helper()
	return runEnv(t, map[string]string{}, stdin, append(args, "--address", addr)...)
}

func runEnv(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errb,
		getenv: func(k string) string { return env[k] }})
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// cell returns the text of column col in the first table row whose first
// cell is key, read at the column's offset in its header line: it asserts
// alignment as well as content. Several tables may have the column; the
// first one with the row wins.
func cell(t *testing.T, out, col, key string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for h, header := range lines {
		off := columnOffset(header, col)
		if off < 0 {
			continue
		}
		for _, l := range lines[h+1:] {
			if l == "" {
				break
			}
			if f := strings.Fields(l); len(f) > 0 && f[0] == key {
				return cellAt(l, off)
			}
		}
	}
	t.Fatalf("no row %q in a table with column %q in:\n%s", key, col, out)
	return ""
}

func cellAt(line string, off int) string {
	if off >= len(line) {
		return ""
	}
	rest := line[off:]
	if i := strings.Index(rest, "  "); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimSpace(rest)
}

// columnOffset finds col as a whole cell of a header line.
func columnOffset(line, col string) int {
	for from := 0; ; {
		i := strings.Index(line[from:], col)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(col)
		startOK := i == 0 || strings.HasSuffix(line[:i], "  ")
		endOK := end == len(line) || strings.HasPrefix(line[end:], "  ")
		if startOK && endOK {
			return i
		}
		from = i + 1
	}
}

// Fixtures with the real wire shapes. Times are relative to fixtureNow so
// that every call returns equal values and relative times print stably.
var fixtureNow = time.Now().UTC().Truncate(time.Second)

func sampleBundle() api.Bundle {
	return api.Bundle{
		BundleSpec: api.BundleSpec{
			ID: "enc-1", Pool: "live", Priority: api.PriorityGold,
			Jobs: []api.Job{
				{Name: "encoder", Requirements: api.Requirements{Capacity: 2.5, Cores: 4, GPUCapacity: 0.5, GPUModel: "A100",
					MemoryMiB: 2048, MemoryLimitMiB: 4096,
					Capabilities: []api.CapabilityRequest{{Name: "st2110-nic", Count: 1}}}, Launch: legacyLaunch(api.DriverExec, "/bin/enc")},
				{Name: "packager", Requirements: api.Requirements{Capacity: 0.5}},
			},
			Placement:  api.Placement{SameAz: api.SameAzSoft},
			Resilience: &api.Resilience{SameNode: api.Forbid, SameAz: api.Forbid, SameCloud: api.Allow},
			Tags:       map[string]string{"team": "sports"},
		},
		State: api.StateDegraded, CreateIndex: 5, ModifyIndex: 9, Epoch: 3,
		Replicas: []api.Replica{
			{Index: 0, Role: api.RolePrimary, State: api.StatePlaced, Epoch: 3, Jobs: []api.JobPlacement{
				{Name: "encoder", NodeID: "w-1", Cores: []int{0, 1, 2, 3}, GPU: &api.GPUShare{Index: 0, Capacity: 0.5}, Status: api.JobRunning},
				{Name: "packager", NodeID: "w-1", Status: api.JobRunning}}},
			{Index: 1, Role: api.RoleBackup, State: api.StatePlaced, Jobs: []api.JobPlacement{
				{Name: "encoder", NodeID: "w-2", Cores: []int{4, 5, 6, 7, 9}, GPUs: []int{1}, Status: api.JobFailed,
					Message: `image "enc:v9" is not on this node (amserver never pulls: build or load it here)`},
				{Name: "packager", NodeID: "w-2", Status: api.JobRunning}}},
		},
		Degradations: []api.Degradation{{Code: "backupSameAz", Message: "backup shares az1 with the primary",
			Since: fixtureNow.Add(-5*time.Minute - 10*time.Second)}},
	}
}

func sampleNode() api.Node {
	return api.Node{
		NodeSpec: api.NodeSpec{ID: "w-1", Pool: "live", Labels: map[string]string{"az": "az1", "cloud": "aws", "rack": "r7"},
			Taints: []string{"gpu-only"}, TotalCapacity: 16, UtilizationCap: 1, TotalCores: 32, TotalMemoryMiB: 65536,
			GPUs:         []api.GPU{{Index: 0, Model: "A100", TotalCapacity: 1}, {Index: 1, Model: "A100", TotalCapacity: 1}},
			Capabilities: []api.Capability{{Name: "st2110-nic", Count: 2, Attributes: map[string]string{"speed": "25g"}}}},
		Status: api.NodeReady, Cordoned: true, LastSeen: fixtureNow.Add(-2*time.Minute - 10*time.Second),
		Tier: "onprem", Allocatable: 16,
		AllocatableMemoryMiB: 65536,
		Reserved: api.Reserved{Capacity: 2.5, MemoryMiB: 6144, Cores: 4, CoreSet: []int{0, 1, 2, 3},
			GPUs:         []api.GPUReserved{{Index: 0, Capacity: 0.5}, {Index: 1, Exclusive: true}},
			Capabilities: []api.CapabilityCount{{Name: "st2110-nic", Count: 1}}},
		Assignments: 2, CreateIndex: 3, ModifyIndex: 8,
	}
}

// sampleBundleSummary and sampleNodeSummary are the list entries of
// sampleBundle and sampleNode, as the server summarises them.
func sampleBundleSummary() api.BundleSummary {
	return api.BundleSummary{ID: "enc-1", Pool: "live", Priority: api.PriorityGold, State: api.StateDegraded, Epoch: 3,
		Jobs: 2, WantReplicas: 2, Replicas: []api.ReplicaSummary{
			{Role: api.RolePrimary, State: api.StatePlaced, Nodes: []string{"w-1"}, Statuses: map[string]int{api.JobRunning: 2}},
			{Role: api.RoleBackup, State: api.StatePlaced, Nodes: []string{"w-2"},
				Statuses: map[string]int{api.JobAssigned: 1, api.JobRunning: 1}}},
		Degradations: []string{"backupSameAz"}, CreateIndex: 5, ModifyIndex: 9}
}

func sampleNodeSummary() api.NodeSummary {
	n := sampleNode()
	return api.NodeSummary{ID: n.ID, Pool: n.Pool, Status: n.Status, Cordoned: n.Cordoned, Labels: n.Labels, Tier: n.Tier,
		Allocatable: 16, ReservedCapacity: 2.5, TotalCores: 32, ReservedCores: 4, GPUCapacity: 2, ReservedGPU: 1.5,
		TotalMemoryMiB: 65536, ReservedMemoryMiB: 6144,
		Assignments: 2, LastSeen: n.LastSeen, CreateIndex: 3, ModifyIndex: 8}
}

func sampleAssignments() []api.Assignment {
	return []api.Assignment{
		{ID: "a-1", BundleID: "enc-1", Job: "encoder", NodeID: "w-1", Role: api.RolePrimary, Epoch: 3, Desired: api.DesiredRun,
			Status: api.JobRunning, Capacity: 2.5, Cores: []int{0, 1, 2, 3}, GPU: &api.GPUShare{Index: 0, Capacity: 0.5},
			MemoryMiB: 2048, MemoryLimitMiB: 4096},
		{ID: "a-2", ServiceID: "ptp", Job: "ptp", NodeID: "w-1", Desired: api.DesiredRun, Status: api.JobRunning},
	}
}

func samplePool() api.Pool {
	return api.Pool{Name: "live", Kind: api.PoolCluster, Scoring: api.ScoringSpread,
		Tiers: []api.Tier{{Name: "onprem", Cloud: "dc"}, {Name: "burst", Cloud: "aws"}},
		Caps:  api.PoolCaps{MaxCapacity: 100}, CapGroup: "rack-7", Defaults: api.PoolDefaults{Capacity: 1, Cores: 2},
		Usage: api.PoolUsage{Capacity: 2.5, Cores: 4}, CreateIndex: 2, ModifyIndex: 4}
}

func sampleCaps() api.ClusterCaps {
	return api.ClusterCaps{PoolCaps: api.PoolCaps{MaxCapacity: 1000}, Usage: &api.PoolUsage{Capacity: 412.5, Cores: 96}, ModifyIndex: 77,
		Groups: map[string]api.CapGroup{
			"rack-7": {PoolCaps: api.PoolCaps{MaxCapacity: 200, MaxCores: 32, MaxMemoryMiB: 65536}, Usage: &api.PoolUsage{Capacity: 150, Cores: 24}, Pools: []string{"live", "edge"}},
			"spare":  {Usage: &api.PoolUsage{}},
		}}
}

func sampleService() api.NodeService {
	return api.NodeService{ID: "ptp", Pools: []string{"live", "edge"}, Lifecycle: "lazy",
		Provides: []api.Capability{{Name: "ptp-clock", Count: 1}}, Requirements: api.ServiceRequirements{Capacity: 0.5, Cores: 1},
		Constraints: []string{`node.labels["ptp"] == "yes"`},
		Launch:      legacyLaunch(api.DriverExec, "/usr/sbin/ptp4l", "-i", "eth0"), CreateIndex: 6, ModifyIndex: 6}
}

func sampleRaft() api.RaftConfiguration {
	return api.RaftConfiguration{
		Servers: []api.Peer{{ID: "s1", Address: "10.0.0.1:7071", Suffrage: "Voter", Leader: true, Status: "alive"},
			{ID: "s2", Address: "10.0.0.2:7071", Suffrage: "Voter", Status: "dead"}},
		Leader:   &api.Leader{ID: "s1", RaftAddr: "10.0.0.1:7071", HTTPAddr: "http://10.0.0.1:7070"},
		ServerID: "s2", State: "Follower", Term: 4, LastIndex: 120, CommitIndex: 120, AppliedIndex: 119, LogStore: "wal",
	}
}

func sampleMembers() []api.Member {
	return []api.Member{
		{Name: "s1", Address: "10.0.0.1:7072", Role: "server", Status: "alive", Labels: map[string]string{"az": "az1", "cloud": "dc"}},
		{Name: "w-1", Address: "10.0.1.1:7072", Role: "worker", Status: "suspect",
			Labels: map[string]string{"az": "az2", "cloud": "aws", "pool": "live", "rack": "r7"}, LastSeen: fixtureNow.Add(-90 * time.Second)},
	}
}

func sampleDigest(n int) string { return fmt.Sprintf("sha256:3b1f4c2a9e8d%052x", n) }

func sampleTemplate() api.Template {
	return api.Template{Name: "live-stack", Digest: sampleDigest(3), Runtime: "compose", Files: 4, Size: 2048, CreateIndex: 310,
		Versions: []api.TemplateVersion{
			{Digest: sampleDigest(1), Runtime: "compose", Files: 3, Size: 1990, CreateIndex: 201},
			{Digest: sampleDigest(3), Runtime: "compose", Files: 4, Size: 2048, CreateIndex: 310},
		}}
}

// legacyLaunch is a launch as the server reads it back (the union's legacy
// form; the older {driver, command} shape is never answered).
func legacyLaunch(driver string, command ...string) api.Launch {
	return api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: driver, Command: command}}
}
