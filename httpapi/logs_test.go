package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/ledger"
)

// fakeWorker answers the worker's log route: the query and the token it
// got, then (with follow) a second line once release is closed; left is
// closed when the request to it ends.
type fakeWorker struct {
	hs      *httptest.Server
	release chan struct{}
	left    chan struct{}
}

func newFakeWorker(t *testing.T) *fakeWorker {
	t.Helper()
	f := &fakeWorker{release: make(chan struct{}), left: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/assignments/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		defer func() { f.left <- struct{}{} }()
		switch r.Header.Get(api.HeaderToken) {
		case "denied":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: &api.Error{Code: api.CodeForbidden, Message: "no"}})
			return
		case "expired": // a finished job whose output the worker no longer keeps
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: &api.Error{Code: api.CodeNotFound, Message: "does not run here"}})
			return
		case "garbage":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "<html>oops</html>")
			return
		case "killed": // one line, then the connection drops as when the worker is killed
			_, _ = io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, r.PathValue("id")+" "+r.URL.RawQuery+" token="+r.Header.Get(api.HeaderToken)+"\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("follow") != "true" {
			return
		}
		select {
		case <-f.release:
			_, _ = io.WriteString(w, "later\n")
		case <-r.Context().Done():
		}
	})
	f.hs = httptest.NewServer(mux)
	t.Cleanup(f.hs.Close)
	return f
}

func workerMember(name, addr string, status gossip.Status) gossip.Member {
	return gossip.Member{Name: name, Status: status, Meta: gossip.Meta{Role: gossip.RoleWorker, HTTPAddr: addr}}
}

func logsGet(t *testing.T, e *env, path, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, e.hs.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(api.HeaderToken, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

const logsOfB1 = "/v1/assignments/b1:0:enc@n1/logs"

// TestAssignmentLogsProxy: the server finds the assignment's worker in
// gossip, passes the query and the caller's token, and answers with the
// worker's text; each failure has its status and code.
func TestAssignmentLogsProxy(t *testing.T) {
	fw := newFakeWorker(t)
	cases := []struct {
		name, path, token string
		members           []gossip.Member
		status            int
		code, body        string
	}{
		{"served", logsOfB1 + "?tail=3&stream=stderr", "tok", []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)},
			200, "", "b1:0:enc@n1 stream=stderr&tail=3 token=tok\n"},
		{"unknown assignment", "/v1/assignments/b9:0:enc@n1/logs", "", nil, 404, api.CodeNotFound, ""},
		{"bad tail", logsOfB1 + "?tail=x", "", nil, 400, api.CodeBadRequest, ""},
		{"bad stream", logsOfB1 + "?stream=all", "", nil, 400, api.CodeBadRequest, ""},
		{"no worker in gossip", logsOfB1, "", nil, 503, api.CodeWorkerUnreachable, ""},
		{"worker dead", logsOfB1, "", []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusDead)}, 503, api.CodeWorkerUnreachable, ""},
		{"no log address", logsOfB1, "", []gossip.Member{workerMember("n1", "", gossip.StatusAlive)}, 503, api.CodeWorkerUnreachable, ""},
		{"worker refuses", logsOfB1, "", []gossip.Member{workerMember("n1", "http://127.0.0.1:1", gossip.StatusAlive)}, 502, api.CodeWorkerUnreachable, ""},
		{"worker's error relayed", logsOfB1, "denied", []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)}, 403, api.CodeForbidden, ""},
		{"worker's garbage", logsOfB1, "garbage", []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)}, 502, api.CodeWorkerUnreachable, ""},
	}
	e := badInputEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.b.set(func(b *testBackend) { b.members = tc.members })
			resp, body := logsGet(t, e, tc.path, tc.token)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.code != "" {
				var eb api.ErrorBody
				if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Code != tc.code {
					t.Fatalf("body %s, want code %s", body, tc.code)
				}
				return
			}
			if body != tc.body || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("body %q (%s), want %q", body, resp.Header.Get("Content-Type"), tc.body)
			}
		})
	}
}

// TestAssignmentLogsStreams: a follower gets the worker's first line before
// the worker sends the next (nothing is buffered), and leaving ends the
// request to the worker.
func TestAssignmentLogsStreams(t *testing.T) {
	fw := newFakeWorker(t)
	e := badInputEnv(t)
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)} })

	body, err := e.c.AssignmentLogs(ctx(t), "b1:0:enc@n1", api.LogOptions{Follow: true, Tail: api.TailAll})
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(body)
	if l, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(l, "b1:0:enc@n1 follow=true") {
		t.Fatalf("first line %q, %v", l, err)
	}
	close(fw.release)
	if l, err := lines.ReadString('\n'); err != nil || l != "later\n" {
		t.Fatalf("second line %q, %v", l, err)
	}
	_ = body.Close()
	<-fw.left

	fw2 := newFakeWorker(t)
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw2.hs.URL, gossip.StatusAlive)} })
	body, err = e.c.AssignmentLogs(ctx(t), "b1:0:enc@n1", api.LogOptions{Follow: true, Tail: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_ = body.Close() // the caller leaves before the worker's next line
	<-fw2.left       // the worker's request ended with it
}

// TestBundleShowsAssignmentIDs: a placed job names its assignment, the id
// the logs route takes; an unplaced one names none.
func TestBundleShowsAssignmentIDs(t *testing.T) {
	e := badInputEnv(t)
	b, _, err := e.c.Bundle(ctx(t), "b1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Replicas[0].Jobs[0].AssignmentID; got != "b1:0:enc@n1" || e.b.State().Assignment(got) == nil {
		t.Fatalf("assignmentId %q", got)
	}
	if len(b.Replicas) > 1 && b.Replicas[1].Jobs[0].NodeID == "" && b.Replicas[1].Jobs[0].AssignmentID != "" {
		t.Fatalf("unplaced job names %q", b.Replicas[1].Jobs[0].AssignmentID)
	}
}

// TestBundleShowsJobMessage: a worker's failure message reads back on the
// bundle's job as "message", as on the worker's own assignment; a report
// without one clears it.
func TestBundleShowsJobMessage(t *testing.T) {
	e := badInputEnv(t)
	const why = `image "amserver-does-not-exist:v9" is not on this node`
	job := func() api.JobPlacement {
		t.Helper()
		b, _, err := e.c.Bundle(ctx(t), "b1", nil)
		if err != nil {
			t.Fatal(err)
		}
		return b.Replicas[0].Jobs[0]
	}
	aid := job().AssignmentID
	if err := e.c.ReportStatus(ctx(t), "n1", aid, api.AssignmentStatus{State: api.JobFailed, Message: why}); err != nil {
		t.Fatal(err)
	}
	if j := job(); j.Status != api.JobFailed || j.Message != why {
		t.Fatalf("job after a failed report: %+v", j)
	}
	if _, body := e.get("/v1/bundles/b1"); !strings.Contains(string(body), `"message":"image \"amserver-does-not-exist:v9\"`) {
		t.Fatalf("bundle JSON carries no message: %s", body)
	}
	if err := e.c.ReportStatus(ctx(t), "n1", aid, api.AssignmentStatus{State: api.JobRunning}); err != nil {
		t.Fatal(err)
	}
	if j := job(); j.Status != api.JobRunning || j.Message != "" {
		t.Fatalf("job after a running report: %+v", j)
	}
}

// TestServiceConvertsRequirements: a service's requirements read back in
// API units, and its constraints and lifecycle as sent.
func TestServiceConvertsRequirements(t *testing.T) {
	in := api.NodeService{Pools: []string{"p1"}, Lifecycle: api.ServiceLifecycleLazy,
		Requirements: api.ServiceRequirements{Capacity: 1.5, Cores: 2}, Constraints: []string{`node.labels["rack"] == "r1"`},
		Provides: []api.Capability{{Name: "cache", Count: 2}}}
	s, err := serviceFromAPI("svc", in)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requirements.Capacity != 1500 || s.Requirements.Cores != 2 || s.Constraints[0] != in.Constraints[0] {
		t.Fatalf("fsm form %+v", s)
	}
	out := serviceToAPI(&s)
	if out.Requirements != in.Requirements || out.Lifecycle != api.ServiceLifecycleLazy || len(out.Constraints) != 1 {
		t.Fatalf("api form %+v", out)
	}
}

// TestAssignmentLogsEndWhenTheWorkerGoes: a worker that stopped (SIGSTOP)
// keeps its connection open; once gossip reports it dead (or left), a log
// request that has no answer yet fails with workerUnreachable and a follow
// stream ends, instead of waiting for it. A suspicion alone cuts nothing.
func TestAssignmentLogsEndWhenTheWorkerGoes(t *testing.T) {
	frozen, arrived := frozenServer(t)
	e := badInputEnv(t)
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", frozen.URL, gossip.StatusAlive)} })
	answered := make(chan error, 1)
	go func() {
		_, err := e.c.AssignmentLogs(ctx(t), "b1:0:enc@n1", api.LogOptions{Tail: 10})
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("answered %v while its worker was frozen and alive", err)
	case <-arrived: // the request reached the frozen worker and waits on it
	}
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", frozen.URL, gossip.StatusDead)} })
	if err := <-answered; !api.IsCode(err, api.CodeWorkerUnreachable) || !strings.Contains(err.Error(), "dead") {
		t.Fatalf("after the worker died: %v, want workerUnreachable saying so", err)
	}

	fw := newFakeWorker(t)
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)} })
	body, err := e.c.AssignmentLogs(ctx(t), "b1:0:enc@n1", api.LogOptions{Follow: true, Tail: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = body.Close() }()
	lines := bufio.NewReader(body)
	if _, err := lines.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusSuspect)} })
	select {
	case <-fw.left:
		t.Fatal("a suspicion ended the follow")
	case <-time.After(2 * peerCheckEvery):
	}
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusLeft)} })
	if l, err := lines.ReadString('\n'); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after its worker left the follow read %q, %v; want it cut short (unexpected EOF), not ended", l, err)
	}
	<-fw.left
}

// TestAssignmentLogsCutWhenTheWorkerDies: a worker killed mid-answer
// (its connection drops) cuts the caller's answer short too: it reads
// what came, then unexpected EOF, not the clean end of a finished log.
func TestAssignmentLogsCutWhenTheWorkerDies(t *testing.T) {
	fw := newFakeWorker(t)
	e := badInputEnv(t)
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)} })
	for _, tc := range []struct {
		token string
		cut   bool // the answer breaks off after the first line
	}{{"reader", false}, {"killed", true}} {
		c, err := api.New(e.hs.URL, api.WithToken(tc.token))
		if err != nil {
			t.Fatal(err)
		}
		body, err := c.AssignmentLogs(ctx(t), "b1:0:enc@n1", api.LogOptions{Follow: false, Tail: 0})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(body)
		_ = body.Close()
		if cut := errors.Is(err, io.ErrUnexpectedEOF); cut != tc.cut || (!cut && err != nil) || len(got) == 0 {
			t.Fatalf("token %s: read %q, %v; want the first line, then cut short: %v", tc.token, got, err, tc.cut)
		}
	}
}

// TestFinishedBatchJobLogs: once a batch bundle finished, its job is no
// longer placed and its assignment is gone, but the bundle still names the
// assignment the job ran as, and its logs are read from that node's worker
// (which keeps the output a while); an id the bundle never ran as is not
// found.
func TestFinishedBatchJobLogs(t *testing.T) {
	fw := newFakeWorker(t)
	e := badInputEnv(t)
	e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)} })
	e.b.mustApply(t, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: fsm.BundleSpec{
		ID: "once", Pool: "p1", Priority: fsm.PrioritySilver, Placement: fsm.Placement{SameAz: fsm.SameAzOff}, Kind: fsm.KindBatch,
		Jobs: []fsm.Job{{Name: "step", Requirements: ledger.Request{Capacity: 100}, Launch: fsm.Launch{Driver: fsm.DriverNone}}},
	}})
	e.b.mustApply(t, fsm.ApplyPlanType, fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{{
		BundleID: "once", Place: []fsm.Place{{Slot: 0, Job: "step", Node: "n1", Grant: ledger.Grant{Capacity: 100}}},
	}}}}})
	const id = "once:0:step@n1"
	e.b.mustApply(t, fsm.AssignmentStatusType, fsm.AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: fsm.JobExited})
	e.b.mustApply(t, fsm.AssignmentStatusType, fsm.AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: fsm.JobStopped})
	if e.b.State().Assignment(id) != nil {
		t.Fatal("the finished job's assignment is still there: the test shows nothing")
	}
	b, _, err := e.c.Bundle(ctx(t), "once", nil)
	if err != nil || b.State != api.StateComplete || b.Replicas[0].Jobs[0].AssignmentID != id || b.Replicas[0].State != api.StateComplete {
		t.Fatalf("finished bundle: %v, state %s, replica %s, job %+v", err, b.State, b.Replicas[0].State, b.Replicas[0].Jobs[0])
	}
	resp, body := logsGet(t, e, "/v1/assignments/"+id+"/logs?tail=5", "")
	if resp.StatusCode != http.StatusOK || body != id+" stream=stdout&tail=5 token=\n" {
		t.Fatalf("logs of the finished job: %d %q", resp.StatusCode, body)
	}
	if resp, _ := logsGet(t, e, "/v1/assignments/once:0:step@n2/logs", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an assignment the bundle never ran as: %d", resp.StatusCode)
	}
	// Its worker no longer keeps the output: the answer says so, not that
	// the job does not run there.
	resp, body = logsGet(t, e, "/v1/assignments/"+id+"/logs", "expired")
	if eb := errorBody(t, []byte(body)); resp.StatusCode != http.StatusNotFound || eb.Code != api.CodeNotFound || !strings.Contains(eb.Message, "no longer keeps the output") {
		t.Fatalf("logs of a finished job whose output expired: %d %s", resp.StatusCode, body)
	}
	// A running job's 404 is the worker's own.
	resp, body = logsGet(t, e, logsOfB1, "expired")
	if eb := errorBody(t, []byte(body)); resp.StatusCode != http.StatusNotFound || !strings.Contains(eb.Message, "does not run here") {
		t.Fatalf("logs of a running job its worker does not hold: %d %s", resp.StatusCode, body)
	}
}

// TestAssignmentLogsOnALaggingFollower: a follower whose state does not
// hold the assignment yet (a job the leader placed an instant ago, whose
// id the caller read from the leader) forwards the request to the leader,
// which serves it; an id the leader does not know either is 404.
func TestAssignmentLogsOnALaggingFollower(t *testing.T) {
	fw := newFakeWorker(t)
	l, f := cluster(t)
	placeBundle(t, l.b, "b1")
	for _, e := range []*env{l, f} {
		e.b.set(func(b *testBackend) { b.members = []gossip.Member{workerMember("n1", fw.hs.URL, gossip.StatusAlive)} })
	}
	if f.b.State().Assignment("b1:0:enc@n1") != nil {
		t.Fatal("the follower knows the assignment: the test shows nothing")
	}
	resp, body := logsGet(t, f, logsOfB1+"?tail=2", "tok")
	if resp.StatusCode != http.StatusOK || body != "b1:0:enc@n1 stream=stdout&tail=2 token=tok\n" {
		t.Fatalf("logs via the follower: %d %q", resp.StatusCode, body)
	}
	resp, body = logsGet(t, f, "/v1/assignments/b9:0:enc@n1/logs", "")
	if resp.StatusCode != http.StatusNotFound || errorBody(t, []byte(body)).Code != api.CodeNotFound {
		t.Fatalf("unknown assignment via the follower: %d %s", resp.StatusCode, body)
	}
}
