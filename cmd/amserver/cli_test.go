package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// serveAll registers every read endpoint with the fixtures.
func serveAll(f *fakeAPI) {
	f.reply("GET /v1/bundles", http.StatusOK, []api.BundleSummary{sampleBundleSummary()})
	f.reply("GET /v1/bundles/enc-1", http.StatusOK, sampleBundle())
	f.reply("GET /v1/nodes", http.StatusOK, []api.NodeSummary{sampleNodeSummary()})
	f.reply("GET /v1/nodes/w-1", http.StatusOK, sampleNode())
	f.reply("GET /v1/nodes/w-1/assignments", http.StatusOK, sampleAssignments())
	f.reply("GET /v1/pools", http.StatusOK, []api.Pool{samplePool()})
	f.reply("GET /v1/caps", http.StatusOK, sampleCaps())
	f.reply("GET /v1/services", http.StatusOK, []api.NodeService{sampleService()})
	f.reply("GET /v1/members", http.StatusOK, sampleMembers())
	f.reply("GET /v1/operator/raft", http.StatusOK, sampleRaft())
	f.reply("GET /v1/health", http.StatusOK, api.Health{Status: "ok", ID: "s2", KnownLeader: true, Leader: "s1", Index: 120, Peers: 3})
	f.reply("GET /v1/status/leader", http.StatusOK, api.Leader{ID: "s1", RaftAddr: "10.0.0.1:7071", HTTPAddr: "http://10.0.0.1:7070"})
	f.reply("GET /v1/templates", http.StatusOK, []api.Template{sampleTemplate()})
	f.reply("GET /v1/templates/live-stack", http.StatusOK, sampleTemplate())
}

// tableCase is one table-output check: cells address a column by header
// and a row by its first cell; text lines are matched as substrings.
type tableCase struct {
	name  string
	args  []string
	cells []cellWant
	text  []string
}

type cellWant struct{ col, row, value string }

var tableCases = []tableCase{
	{"bundle list", []string{"bundle", "list"}, []cellWant{
		{"POOL", "enc-1", "live"}, {"PRIORITY", "enc-1", "gold"}, {"STATE", "enc-1", "degraded"},
		{"JOBS", "enc-1", "2"}, {"REPLICAS", "enc-1", "2/2"}, {"EPOCH", "enc-1", "3"}, {"DEGRADATIONS", "enc-1", "backupSameAz"}, {"FAILED", "enc-1", "0"},
	}, nil},
	{"bundle status", []string{"bundle", "status", "enc-1"}, []cellWant{
		{"CAPACITY", "encoder", "2.5"}, {"GPU", "encoder", "0.5 A100"}, {"CAPABILITIES", "encoder", "st2110-nic:1"},
		{"LAUNCH", "encoder", "exec"}, {"LAUNCH", "packager", "none"}, {"RUNTIME", "encoder", "-"},
		{"MEMORY", "encoder", "2048 MiB (limit 4096)"}, {"MEMORY", "packager", "-"},
		{"NODE", "0", "w-1"}, {"CORES", "0", "0-3"}, {"GPU", "0", "0 (0.5)"}, {"STATUS", "0", "running"}, {"ROLE", "1", "backup"},
		{"CORES", "1", "4-7,9"}, {"GPU", "1", "1 (exclusive)"}, {"STATUS", "1", "failed"},
		{"SINCE", "backupSameAz", "5m ago"}, {"MESSAGE", "backupSameAz", "backup shares az1 with the primary"},
	}, []string{"Epoch       3", "\nMessages\nreplica 1 job encoder (failed): image \"enc:v9\" is not on this node (amserver never pulls: build or load it here)\n",
		"Resilience  sameNode=forbid sameAz=forbid sameCloud=allow", "Tags        team=sports",
		"Placement   sameNodeDefault=false sameAz=soft", "created 5, modified 9"}},
	{"node list", []string{"node", "list"}, []cellWant{
		{"STATUS", "w-1", "ready"}, {"SCHEDULING", "w-1", "cordoned"}, {"AZ", "w-1", "az1"}, {"CLOUD", "w-1", "aws"},
		{"TIER", "w-1", "onprem"}, {"CAPACITY", "w-1", "2.5/16 cap"}, {"CORES", "w-1", "4/32"}, {"GPU", "w-1", "1.5/2"},
		{"ASSIGNMENTS", "w-1", "2"}, {"LAST SEEN", "w-1", "2m ago"},
	}, nil},
	{"node list wide", []string{"node", "list", "-o", "wide"}, []cellWant{
		{"MEMORY", "w-1", "6144/65536 MiB"}, {"OTHER LABELS", "w-1", "rack=r7"},
	}, nil},
	{"node status", []string{"node", "status", "w-1"}, []cellWant{
		{"RESERVED", "0", "0.5/1"}, {"EXCLUSIVE", "0", "no"}, {"MODEL", "1", "A100"}, {"RESERVED", "1", "1/1"}, {"EXCLUSIVE", "1", "yes"},
		{"RESERVED", "st2110-nic", "1/2"}, {"ATTRIBUTES", "st2110-nic", "speed=25g"},
		{"OWNER", "a-1", "bundle enc-1"}, {"OWNER", "a-2", "service ptp"}, {"CORES", "a-1", "0-3"}, {"EPOCH", "a-1", "3"},
		{"MEMORY", "a-1", "2048 MiB (limit 4096)"}, {"MEMORY", "a-2", "-"},
	}, []string{"Memory      6144/65536 MiB reserved", "Labels      az=az1,cloud=aws,rack=r7", "Taints      gpu-only", "Capacity    2.5/16 cap reserved (total 16, utilization cap 1)",
		"Cores       4/32 reserved, pinned 0-3", "Scheduling  cordoned", "Runtimes    none listed: runs exec jobs"}},
	{"pool list", []string{"pool", "list"}, []cellWant{
		{"KIND", "live", "cluster"}, {"SCORING", "live", "spread"}, {"TIERS", "live", "onprem(dc),burst(aws)"},
		{"CAPACITY", "live", "2.5/100 cap"}, {"CORES", "live", "4/unlimited cores"}, {"DEFAULTS", "live", "capacity=1 cores=2"},
	}, nil},
	{"pool list wide", []string{"pool", "list", "-o", "wide"}, []cellWant{
		{"GROUP", "live", "rack-7"}, {"NODES", "live", "-"}, {"MODIFIED", "live", "4"},
	}, nil},
	{"caps get", []string{"caps", "get"}, []cellWant{
		{"CAPACITY", "cluster", "412.5/1000 cap"}, {"CORES", "cluster", "96/unlimited cores"}, {"POOLS", "cluster", "(all)"},
		{"CAPACITY", "group/rack-7", "150/200 cap"}, {"CORES", "group/rack-7", "24/32 cores"}, {"POOLS", "group/rack-7", "live,edge"},
		{"CAPACITY", "group/spare", "0/unlimited cap"}, {"POOLS", "group/spare", "-"},
	}, nil},
	{"service list", []string{"service", "list"}, []cellWant{
		{"POOLS", "ptp", "live,edge"}, {"PROVIDES", "ptp", "ptp-clock:1"}, {"CONSUMES", "ptp", "-"},
		{"LIFECYCLE", "ptp", "lazy"}, {"REQUIRES", "ptp", "cap=0.5 cores=1"},
		{"COMMAND", "ptp", "/usr/sbin/ptp4l -i eth0"},
	}, nil},
	{"members", []string{"members"}, []cellWant{
		{"ROLE", "w-1", "worker"}, {"STATUS", "w-1", "suspect"}, {"POOL", "w-1", "live"}, {"OTHER LABELS", "w-1", "rack=r7"},
		{"LAST SEEN", "w-1", "1m ago"}, {"LAST SEEN", "s1", "-"}, {"AZ", "s1", "az1"},
	}, nil},
	{"raft list-peers", []string{"operator", "raft", "list-peers"}, []cellWant{
		{"STATE", "s1", "leader"}, {"STATE", "s2", "follower"}, {"ADDRESS", "s2", "10.0.0.2:7071"}, {"SUFFRAGE", "s1", "Voter"},
		{"STATUS", "s1", "alive"}, {"STATUS", "s2", "dead"},
	}, []string{"term 4, last index 120, commit index 120, applied index 119 (answered by s2, Follower, log store wal)"}},
	{"template list", []string{"template", "list"}, []cellWant{
		{"RUNTIME", "live-stack", "compose"}, {"DIGEST", "live-stack", "sha256:3b1f4c2a9e8d"}, {"FILES", "live-stack", "4"},
		{"SIZE", "live-stack", "2.0 KiB"}, {"INDEX", "live-stack", "310"},
	}, nil},
	{"template show", []string{"template", "show", "live-stack"}, []cellWant{
		{"RUNTIME", sampleDigest(1), "compose"}, {"SIZE", sampleDigest(1), "1.9 KiB"}, {"INDEX", sampleDigest(3), "310"},
	}, []string{"Digest   " + sampleDigest(3), "Files    4"}},
	{"status", []string{"status"}, nil, []string{"(id s2, follower)", "Leader      s1 (raft 10.0.0.1:7071, http http://10.0.0.1:7070)",
		"Raft peers  3", "Index       120", "Health      ok"}},
}

// TestTables checks that table output has the expected columns, aligned,
// with the expected values (units, ranges, relative times).
func TestTables(t *testing.T) {
	f := newFake(t)
	serveAll(f)
	for _, tt := range tableCases {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tt.args...)
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, w := range tt.cells {
				if got := cell(t, r.stdout, w.col, w.row); got != w.value {
					t.Errorf("%s of %s = %q, want %q\n%s", w.col, w.row, got, w.value, r.stdout)
				}
			}
			for _, s := range tt.text {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("output lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

// TestJSONOutput checks that --json prints the API's JSON: it decodes
// strictly into the api types and equals what the server sent.
func TestJSONOutput(t *testing.T) {
	tests := []struct {
		args []string
		into func() any
		want any
	}{
		{[]string{"bundle", "list"}, func() any { return &[]api.BundleSummary{} }, []api.BundleSummary{sampleBundleSummary()}},
		{[]string{"bundle", "status", "enc-1"}, func() any { return &api.Bundle{} }, sampleBundle()},
		{[]string{"node", "list"}, func() any { return &[]api.NodeSummary{} }, []api.NodeSummary{sampleNodeSummary()}},
		{[]string{"node", "status", "w-1"}, func() any { return &api.Node{} }, sampleNode()},
		{[]string{"pool", "list"}, func() any { return &[]api.Pool{} }, []api.Pool{samplePool()}},
		{[]string{"service", "list"}, func() any { return &[]api.NodeService{} }, []api.NodeService{sampleService()}},
		{[]string{"members"}, func() any { return &[]api.Member{} }, sampleMembers()},
		{[]string{"operator", "raft", "list-peers"}, func() any { return &api.RaftConfiguration{} }, sampleRaft()},
	}
	f := newFake(t)
	serveAll(f)
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", append(tt.args, "--json")...)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "\n  ") {
				t.Errorf("output is not indented:\n%s", r.stdout)
			}
			got := tt.into()
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(got); err != nil {
				t.Fatalf("decode: %v\n%s", err, r.stdout)
			}
			if a, b := mustJSON(t, got), mustJSON(t, tt.want); a != b {
				t.Errorf("round trip differs:\n got %s\nwant %s", a, b)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimPrefix(b, []byte("&")))
}

func TestStatusJSONAndNoLeader(t *testing.T) {
	f := newFake(t)
	serveAll(f)
	r := runCLI(t, f.srv.URL, "", "status", "--json")
	var st clusterStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != exitOK {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if st.Leader == nil || st.Leader.ID != "s1" || st.Health.Peers != 3 {
		t.Errorf("status = %+v", st)
	}

	g := newFake(t)
	g.reply("GET /v1/health", http.StatusOK, api.Health{Status: "ok", ID: "s2", Peers: 3})
	r = runCLI(t, g.srv.URL, "", "status")
	if r.code != exitFailure || !strings.Contains(r.stdout, "none known") || !strings.Contains(r.stderr, "no leader") {
		t.Errorf("no leader: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A server restarted without a quorum has applied nothing: its index
	// 0 says so in the words --stale's warning uses for the same state.
	if !strings.Contains(r.stdout, "Index       0 ("+emptyState+")") {
		t.Errorf("empty state's index:\n%s", r.stdout)
	}
}

// TestWrites checks what the write commands send and print.
func TestWrites(t *testing.T) {
	f := newFake(t)
	node := sampleNode()
	f.reply("POST /v1/nodes/w-1/cordon", http.StatusOK, node)
	f.reply("POST /v1/nodes/w-1/drain", http.StatusOK, node)
	f.on("DELETE /v1/nodes/w-1", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.reply("DELETE /v1/bundles/enc-1", http.StatusAccepted, sampleBundle())
	f.reply("PUT /v1/bundles/enc-1", http.StatusOK, api.CreateResponse{Bundle: sampleBundle()})
	f.reply("PUT /v1/pools/live", http.StatusOK, samplePool())
	f.reply("PUT /v1/caps", http.StatusOK, sampleCaps())
	f.reply("PUT /v1/services/ptp", http.StatusOK, sampleService())
	f.on("DELETE /v1/operator/raft/peers/s3", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.on("POST /v1/operator/raft/transfer-leadership", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	dir := t.TempDir()
	bundleFile := writeFile(t, dir, "b.yaml", "id: enc-1\npool: live\njobs:\n  - name: encoder\n    requirements: {capacity: 2}\n")
	poolFile := writeFile(t, dir, "p.json", `{"name": "live", "scoring": "spread", "caps": {"maxCapacity": 100}}`)
	svcFile := writeFile(t, dir, "s.yaml", "id: ptp\npools: [live]\nlaunch: {driver: exec, command: [ptp4l]}\n")
	capsFile := writeFile(t, dir, "c.yaml", "maxCapacity: 1000\ngroups: {rack-7: {maxCapacity: 200, maxCores: 32}}\n")

	tests := []struct {
		args         []string
		method, path string
		query, out   string
	}{
		{[]string{"node", "cordon", "w-1"}, "POST", "/v1/nodes/w-1/cordon", "", `node "w-1" cordoned`},
		{[]string{"node", "drain", "w-1"}, "POST", "/v1/nodes/w-1/drain", "", `node "w-1" is draining`},
		{[]string{"node", "deregister", "w-1", "--force"}, "DELETE", "/v1/nodes/w-1", "force=true", `node "w-1" deregistered`},
		{[]string{"bundle", "delete", "enc-1"}, "DELETE", "/v1/bundles/enc-1", "", `bundle "enc-1" is being deleted`},
		{[]string{"bundle", "replace", bundleFile, "--cas", "9"}, "PUT", "/v1/bundles/enc-1", "cas=9", `bundle "enc-1" replaced (state degraded when written, modify index 9; the placer acts next: amserver bundle status enc-1)`},
		{[]string{"pool", "apply", poolFile}, "PUT", "/v1/pools/live", "", `pool "live" applied (kind cluster, modify index 4)`},
		{[]string{"service", "apply", svcFile}, "PUT", "/v1/services/ptp", "", `service "ptp" applied`},
		{[]string{"caps", "set", capsFile}, "PUT", "/v1/caps", "", `caps set (cluster capacity 1000, cores unlimited; 1 cap groups with caps; modify index 77)`},
		{[]string{"operator", "raft", "remove-peer", "s3"}, "DELETE", "/v1/operator/raft/peers/s3", "", `server "s3" removed`},
		{[]string{"operator", "raft", "transfer-leadership", "s2"}, "POST", "/v1/operator/raft/transfer-leadership", "", `leadership transferred to "s2"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tt.args...)
			if r.code != exitOK || !strings.Contains(r.stdout, tt.out) {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			req := f.last(tt.method, tt.path)
			if got := encodeQuery(req.query); got != tt.query {
				t.Errorf("query = %q, want %q", got, tt.query)
			}
		})
	}
	var transfer api.TransferLeadershipRequest
	if err := json.Unmarshal(f.last("POST", "/v1/operator/raft/transfer-leadership").body, &transfer); err != nil || transfer.ID != "s2" {
		t.Errorf("transfer body = %+v, %v", transfer, err)
	}
	var pool api.Pool
	if err := json.Unmarshal(f.last("PUT", "/v1/pools/live").body, &pool); err != nil || pool.Caps.MaxCapacity != 100 || pool.Scoring != "spread" {
		t.Errorf("pool body = %+v, %v", pool, err)
	}
	var caps api.ClusterCaps
	if err := json.Unmarshal(f.last("PUT", "/v1/caps").body, &caps); err != nil || caps.MaxCapacity != 1000 || caps.Groups["rack-7"].MaxCores != 32 {
		t.Errorf("caps body = %+v, %v", caps, err)
	}
}

func encodeQuery(q map[string][]string) string {
	var parts []string
	for k, vs := range q {
		for _, v := range vs {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, "&")
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGlobals checks the environment fallbacks, the token header and --stale.
func TestGlobals(t *testing.T) {
	f := newFake(t)
	serveAll(f)
	env := map[string]string{envAddr: f.srv.URL, envToken: "s3cret"}
	if r := runEnv(t, env, "", "bundle", "list", "--stale"); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	req := f.last("GET", "/v1/bundles")
	if req.token != "s3cret" {
		t.Errorf("token = %q, want the one from %s", req.token, envToken)
	}
	if _, ok := req.query["stale"]; !ok {
		t.Errorf("--stale not sent: %v", req.query)
	}
	// Flags win over the environment.
	env[envAddr] = "http://127.0.0.1:1"
	if r := runEnv(t, env, "", "node", "list", "--address", f.srv.URL, "--token", "flag"); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := f.last("GET", "/v1/nodes").token; got != "flag" {
		t.Errorf("token = %q, want the flag's", got)
	}
	if r := runEnv(t, env, "", "completion", "bash"); r.code != exitOK || !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("completion: exit %d, %.80q", r.code, r.stdout)
	}
}

// TestNodeStatusRequire: the worker healthcheck passes only on the status
// it requires, and says why when it fails.
func TestNodeStatusRequire(t *testing.T) {
	f := newFake(t)
	serveAll(f)
	tests := []struct {
		require string
		code    int
		stderr  string
	}{
		{"ready", exitOK, ""},
		{"down", exitFailure, `error: node "w-1" is ready, not down`},
	}
	for _, tt := range tests {
		t.Run(tt.require, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", "node", "status", "w-1", "--require", tt.require)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q", r.code, tt.code, r.stderr, tt.stderr)
			}
		})
	}
}

// TestJobMessageLines: a message's output lines each get a line of their
// own, indented under the job, a control character quoted; jobs without a
// message print nothing, and a bundle with none no heading.
func TestJobMessageLines(t *testing.T) {
	reps := []api.Replica{{Index: 0, Jobs: []api.JobPlacement{
		{Name: "quiet", Status: api.JobRunning},
		{Name: "main", Status: api.JobFailed, Message: "main exited with code 2: first\n\x1b[31mred\n"}}}}
	var out strings.Builder
	printJobMessages(&out, reps)
	want := "\nMessages\nreplica 0 job main (failed): main exited with code 2: first\n  \"\\x1b[31mred\"\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	printJobMessages(&out, []api.Replica{{Jobs: reps[0].Jobs[:1]}})
	if out.Len() != 0 {
		t.Fatalf("no messages printed %q", out.String())
	}
}

// TestBundleStatusSaysRolling: a service in the middle of a rollout says
// so, and one that is not says nothing of it.
func TestBundleStatusSaysRolling(t *testing.T) {
	for _, rolling := range []bool{false, true} {
		b := sampleBundle()
		b.Kind, b.Count, b.Generation, b.Rolling = api.KindService, 2, 3, rolling
		var out strings.Builder
		if err := printBundle(&out, &b, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "Rollout     in progress"); got != rolling {
			t.Fatalf("rolling %v, the status says a rollout: %v\n%s", rolling, got, out.String())
		}
	}
}

// TestNodeStatusRuntimes: node status shows what the node runs, which the
// runtime stage of an explanation is about.
func TestNodeStatusRuntimes(t *testing.T) {
	cases := []struct {
		runtimes []string
		kind     string
		want     string
	}{
		{nil, "", "Runtimes    none listed: runs exec jobs"},
		{[]string{"compose", "docker", "exec"}, "", "Runtimes    compose, docker, exec"},
		{[]string{"exec"}, api.NodeKindProxmox, "Runtimes    exec (kind proxmox)"},
	}
	for _, tc := range cases {
		n := sampleNode()
		n.Runtimes, n.Kind = tc.runtimes, tc.kind
		var b strings.Builder
		if err := printNode(&b, &n, fixtureNow); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want+"\n") {
			t.Errorf("runtimes %v kind %q: want line %q in\n%s", tc.runtimes, tc.kind, tc.want, b.String())
		}
	}
}

// TestNodeStatusAssignmentMessages: why an assignment failed (a node
// service's instance has no bundle whose status would show it) is printed
// under the node's assignments, every line of it.
func TestNodeStatusAssignmentMessages(t *testing.T) {
	a := &app{}
	n := sampleNode()
	as := []api.Assignment{
		{ID: "svc:relay@n1", ServiceID: "relay", Job: "relay", Desired: api.DesiredRun, Status: api.JobFailed,
			Message: "sh exited with code 3\nlast line\n"},
		{ID: "enc-1:0:a@n1", BundleID: "enc-1", Job: "a", Desired: api.DesiredRun, Status: api.JobRunning},
	}
	var b strings.Builder
	if err := a.printAssignments(&b, io.Discard, nodeStatus{node: &n, assignments: func() ([]api.Assignment, error) { return as, nil }}); err != nil {
		t.Fatal(err)
	}
	want := "\nMessages\nsvc:relay@n1 (failed): sh exited with code 3\n  last line\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Fatalf("want the output to end with %q:\n%s", want, b.String())
	}
	b.Reset()
	as[0].Message = ""
	if err := a.printAssignments(&b, io.Discard, nodeStatus{node: &n, assignments: func() ([]api.Assignment, error) { return as, nil }}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Messages") {
		t.Fatalf("a Messages heading without messages:\n%s", b.String())
	}
}

// TestBundleListCountsFailedJobs: a bundle whose stacks failed still reads
// placed (its state goes by placement); the list's FAILED column shows them.
func TestBundleListCountsFailedJobs(t *testing.T) {
	cases := []struct {
		statuses []map[string]int
		want     string
	}{
		{[]map[string]int{{api.JobRunning: 2}, {api.JobRunning: 2}}, "0"},
		{[]map[string]int{{api.JobFailed: 1, api.JobRunning: 1}, {api.JobFailed: 2}}, "3"},
		{[]map[string]int{{api.JobUnplaced: 1}}, "0"},
	}
	for _, tc := range cases {
		b := sampleBundleSummary()
		b.Replicas = nil
		for _, st := range tc.statuses {
			b.Replicas = append(b.Replicas, api.ReplicaSummary{Role: api.RolePrimary, Statuses: st})
		}
		row := bundleRow(b, fixtureNow)
		if got := row[7]; got != tc.want {
			t.Errorf("statuses %v: FAILED %q, want %q (row %v)", tc.statuses, got, tc.want, row)
		}
	}
}
