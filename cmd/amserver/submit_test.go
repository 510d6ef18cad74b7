package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// timeline is a fake bundle whose state changes at given Raft indexes;
// GET answers like a blocking query: the first version past ?index=.
type timeline struct {
	mu       sync.Mutex
	versions []api.Bundle // ascending ModifyIndex; versions[0] is what POST returns
	indexes  []uint64     // the ?index= of every GET, in order
	waits    []string
}

func (tl *timeline) serve(f *fakeAPI) {
	f.reply("POST /v1/bundles", http.StatusCreated, api.CreateResponse{Bundle: tl.versions[0],
		Warnings: []api.Finding{{Code: api.FindingUnsatisfiableGpu, Message: "no node has an H100", Job: "encoder"}}})
	f.on("GET /v1/bundles/{id}", func(w http.ResponseWriter, r *http.Request) {
		idx, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		tl.mu.Lock()
		tl.indexes = append(tl.indexes, idx)
		tl.waits = append(tl.waits, r.URL.Query().Get("wait"))
		tl.mu.Unlock()
		for _, v := range tl.versions {
			if v.ModifyIndex > idx {
				writeJSON(w, http.StatusOK, v.ModifyIndex, v)
				return
			}
		}
		// Nothing newer: block like the server does, then answer unchanged.
		select {
		case <-r.Context().Done():
		case <-time.After(wait):
		}
		last := tl.versions[len(tl.versions)-1]
		writeJSON(w, http.StatusOK, last.ModifyIndex, last)
	})
}

func version(state string, index uint64) api.Bundle {
	b := sampleBundle()
	b.State, b.ModifyIndex, b.Degradations = state, index, nil
	if state != api.StatePlaced {
		b.Replicas = nil
	}
	if state == api.StateUnplaceable {
		b.Explain = &api.Explain{NodesEvaluated: 40, Filtered: map[string]int{"capacity": 12, "capability:st2110-nic": 28},
			NearestMiss: &api.NearestMiss{NodeID: "w-3", Stage: "capacity", Detail: "needs 2.5, has 1"}}
	}
	return b
}

// TestSubmitWait follows pending → (an unrelated index bump) → placed with
// blocking queries and prints each state change once.
func TestSubmitWait(t *testing.T) {
	f := newFake(t)
	tl := &timeline{versions: []api.Bundle{version(api.StatePending, 10), version(api.StatePending, 11), version(api.StatePlaced, 12)}}
	tl.serve(f)
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")

	r := runCLI(t, f.srv.URL, "", "bundle", "submit", file, "--wait")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := strings.Count(r.stdout, `bundle "enc-1" is pending`); got != 1 {
		t.Errorf("pending printed %d times:\n%s", got, r.stdout)
	}
	pending, placed := strings.Index(r.stdout, "is pending"), strings.Index(r.stdout, `bundle "enc-1" is placed (epoch 3)`)
	if pending < 0 || placed < pending {
		t.Errorf("want pending then placed:\n%s", r.stdout)
	}
	if got := cell(t, r.stdout, "NODE", "0"); got != "w-1" {
		t.Errorf("final replicas table: NODE = %q\n%s", got, r.stdout)
	}
	if !strings.Contains(r.stderr, "unsatisfiableGpu") || !strings.Contains(r.stderr, "1 warning") {
		t.Errorf("warnings not on stderr: %q", r.stderr)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if want := []uint64{10, 11}; !slices.Equal(tl.indexes, want) {
		t.Errorf("blocking indexes = %v, want %v", tl.indexes, want)
	}
	for _, w := range tl.waits {
		if d, err := time.ParseDuration(w); err != nil || d <= 0 || d > defaultTimeout {
			t.Errorf("wait = %q, want a positive duration within --timeout", w)
		}
	}
}

func TestSubmitWaitJSON(t *testing.T) {
	f := newFake(t)
	tl := &timeline{versions: []api.Bundle{version(api.StatePending, 10), version(api.StatePlaced, 12)}}
	tl.serve(f)
	file := writeFile(t, t.TempDir(), "b.json", `{"id": "enc-1", "pool": "live", "jobs": [{"name": "encoder"}]}`)
	r := runCLI(t, f.srv.URL, "", "bundle", "submit", file, "--wait", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var resp api.CreateResponse
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("stdout is not one create response: %v\n%s", err, r.stdout)
	}
	if resp.Bundle.State != api.StatePlaced || resp.Bundle.ModifyIndex != 12 || len(resp.Warnings) != 1 {
		t.Errorf("final = %+v", resp)
	}
}

func TestSubmitWaitUnplaceable(t *testing.T) {
	f := newFake(t)
	tl := &timeline{versions: []api.Bundle{version(api.StatePending, 10), version(api.StateUnplaceable, 11)}}
	tl.serve(f)
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")
	r := runCLI(t, f.srv.URL, "", "bundle", "submit", file, "--wait")
	if r.code != exitFailure || !strings.Contains(r.stderr, `error: bundle "enc-1" is unplaceable for now`) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Explain: 40 nodes evaluated") ||
		!strings.Contains(r.stdout, "Nearest miss: node w-3, stopped at capacity: needs 2.5, has 1") {
		t.Errorf("explanation missing:\n%s", r.stdout)
	}
	// Largest filter first.
	if a, b := strings.Index(r.stdout, "capability:st2110-nic"), strings.Index(r.stdout, "capacity  "); a < 0 || b < a {
		t.Errorf("filters not sorted by count:\n%s", r.stdout)
	}
	if got := cell(t, r.stdout, "NODES REMOVED", "capability:st2110-nic"); got != "28" {
		t.Errorf("NODES REMOVED = %q", got)
	}
}

func TestSubmitWaitTimeout(t *testing.T) {
	f := newFake(t)
	tl := &timeline{versions: []api.Bundle{version(api.StatePending, 10)}}
	tl.serve(f)
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")
	start := time.Now()
	r := runCLI(t, f.srv.URL, "", "bundle", "submit", file, "--wait", "--timeout", "400ms")
	if r.code != exitFailure || !strings.Contains(r.stderr, `error: bundle "enc-1" is still pending after 400ms`) {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s despite --timeout 400ms", d)
	}
}

func TestPlan(t *testing.T) {
	f := newFake(t)
	placed := version(api.StatePlaced, 0)
	f.reply("POST /v1/bundles/plan", http.StatusOK, api.PlanResponse{Bundle: placed,
		Explain: &api.Explain{NodesEvaluated: 5, Filtered: map[string]int{"taints": 2}},
		Evictions: []api.PlanEviction{{BundleID: "low-1", Priority: "bronze", Role: "primary", Promoted: true, Jobs: []string{"a", "b"}},
			{BundleID: "low-2", Priority: "silver", Role: "backup", Jobs: []string{"a"}},
			{BundleID: "low-3", Priority: "bronze", Role: "primary", Jobs: []string{"c"}}}})
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")
	r := runCLI(t, f.srv.URL, "", "bundle", "plan", file)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, s := range []string{`Plan for bundle "enc-1" (dry run, nothing was changed): would be placed by evicting 3 replica(s) of lower-priority bundles`,
		"Explain: 5 nodes evaluated", "\nEvictions\n"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, r.stdout)
		}
	}
	if got := cell(t, r.stdout, "NODE", "1"); got != "w-2" {
		t.Errorf("backup node = %q", got)
	}
	if got := cell(t, r.stdout, "NODES REMOVED", "taints"); got != "2" {
		t.Errorf("taints = %q", got)
	}
	for _, c := range []cellWant{{"THEN", "low-1", "its backup is promoted"}, {"JOBS", "low-1", "a,b"}, {"REPLICA", "low-2", "backup"},
		{"THEN", "low-2", "noBackup (its primary keeps running)"}, {"THEN", "low-3", "pending: no backup takes over"}} {
		if got := cell(t, r.stdout, c.col, c.row); got != c.value {
			t.Errorf("evictions: %s of %s = %q, want %q", c.col, c.row, got, c.value)
		}
	}
}

// TestSubmitWaitNonBlockingServer: a server that ignores ?index= and sends
// no index must not make the wait loop spin.
func TestSubmitWaitNonBlockingServer(t *testing.T) {
	f := newFake(t)
	f.reply("POST /v1/bundles", http.StatusCreated, api.CreateResponse{Bundle: version(api.StatePending, 10)})
	f.on("GET /v1/bundles/enc-1", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(version(api.StatePending, 10))
	})
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")
	r := runCLI(t, f.srv.URL, "", "bundle", "submit", file, "--wait", "--timeout", "600ms")
	if r.code != exitFailure {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	gets := 0
	for _, req := range f.seen() {
		if req.method == http.MethodGet {
			gets++
		}
	}
	if gets > 5 {
		t.Errorf("%d queries in 600ms: the loop spins", gets)
	}
}

// TestBundleScale: scale reads the bundle, replaces it with only the count
// changed, conditional on the modify index it read; a count outside
// 1..10000 is a usage error that sends nothing.
func TestBundleScale(t *testing.T) {
	f := newFake(t)
	svc := sampleBundle()
	svc.Kind, svc.Count, svc.Resilience = api.KindService, 2, nil
	f.reply("GET /v1/bundles/enc-1", http.StatusOK, svc)
	f.on("PUT /v1/bundles/enc-1", func(w http.ResponseWriter, r *http.Request) {
		var in api.BundleSpec
		_ = json.NewDecoder(r.Body).Decode(&in)
		out := svc
		out.BundleSpec = in
		writeJSON(w, http.StatusOK, 10, api.CreateResponse{Bundle: out, Warnings: []api.Finding{}})
	})
	r := runCLI(t, f.srv.URL, "", "bundle", "scale", "enc-1", "5")
	if r.code != exitOK || !strings.Contains(r.stdout, `bundle "enc-1" scaled to 5 replicas`) {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	put := f.last("PUT", "/v1/bundles/enc-1")
	var sent api.BundleSpec
	if err := json.Unmarshal(put.body, &sent); err != nil || sent.Count != 5 || sent.Kind != api.KindService ||
		len(sent.Jobs) != len(svc.Jobs) || !slices.Equal(put.query["cas"], []string{"9"}) {
		t.Fatalf("sent %s ?%v (%v)", put.body, put.query, err)
	}
	for _, bad := range []string{"0", "10001", "x"} {
		before := len(f.seen())
		if r := runCLI(t, f.srv.URL, "", "bundle", "scale", "enc-1", bad); r.code != exitUsage || len(f.seen()) != before {
			t.Fatalf("scale to %s: exit %d, requests %d→%d", bad, r.code, before, len(f.seen()))
		}
	}
}

// TestSettledErrorBatchFailed: --wait's error for a failed batch bundle
// names the job that ended it, its exit code and restarts, with or
// without a restart policy.
func TestSettledErrorBatchFailed(t *testing.T) {
	two, zero := 2, 0
	for _, tc := range []struct {
		name string
		jobs []api.JobPlacement
		want string
	}{
		{"no restart policy", []api.JobPlacement{{Name: "ok", Status: api.JobExited, ExitCode: &zero}, {Name: "load", Status: api.JobExited, ExitCode: &two}},
			`batch bundle "etl" failed: job load exited 2 after 0 restart(s)`},
		{"restarts spent", []api.JobPlacement{{Name: "load", Status: api.JobExited, ExitCode: &two, Attempts: 3}},
			`batch bundle "etl" failed: job load exited 2 after 3 restart(s)`},
		{"no exit code known", []api.JobPlacement{{Name: "load"}}, `batch bundle "etl" failed: a job exhausted its restart attempts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &api.Bundle{BundleSpec: api.BundleSpec{ID: "etl", Kind: api.KindBatch}, State: api.StateFailed,
				Replicas: []api.Replica{{Jobs: tc.jobs}}}
			if err := settledError(b); err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
