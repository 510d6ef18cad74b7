package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/raftstore"
)

// cluster is a leader and a follower that points at it.
func cluster(t *testing.T) (leader, follower *env) {
	t.Helper()
	leader = leaderEnv(t)
	follower = newEnv(t, newTestBackend("s2"))
	follower.b.setFollower(raftstore.LeaderInfo{ID: "s1", RaftAddr: "s1:7071", HTTPAddr: leader.hs.URL}, 1234*time.Millisecond)
	seedCluster(t, leader.b)
	return leader, follower
}

func TestFollowerForwardsWritesAndReads(t *testing.T) {
	l, f := cluster(t)
	created, err := f.c.CreateBundle(ctx(t), validSpec("b1"))
	if err != nil || !created.Created {
		t.Fatalf("create via follower = %+v, %v", created, err)
	}
	if l.b.State().Bundle("b1") == nil || f.b.State().Bundle("b1") != nil {
		t.Fatal("the write was not applied on the leader only")
	}
	// A default read on the follower is served by the leader: the follower's
	// own state has no such bundle.
	got, meta, err := f.c.Bundle(ctx(t), "b1", nil)
	if err != nil || got.ID != "b1" || meta.Index != created.Bundle.ModifyIndex || !meta.KnownLeader || meta.LastContact != 0 {
		t.Fatalf("default read via follower = %+v %+v, %v", got, meta, err)
	}
	if _, _, err := f.c.Bundle(ctx(t), "b1", &api.QueryOptions{Consistent: true}); err != nil {
		t.Fatalf("consistent read via follower: %v", err)
	}
	// ?stale is served locally, saying how stale it may be.
	resp, raw := f.do(http.MethodGet, "/v1/bundles/b1?stale", nil)
	if resp.StatusCode != http.StatusNotFound || errorBody(t, raw).Code != api.CodeNotFound {
		t.Fatalf("stale read = %d %s", resp.StatusCode, raw)
	}
	resp, _ = f.do(http.MethodGet, "/v1/bundles?stale=true", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(api.HeaderLastContact) != "1234" ||
		resp.Header.Get(api.HeaderKnownLeader) != "true" || resp.Header.Get(api.HeaderIndex) != "1" {
		t.Fatalf("stale headers = %d %v", resp.StatusCode, resp.Header)
	}
	list, meta, err := f.c.Bundles(ctx(t), api.BundleFilter{}, &api.QueryOptions{Stale: true})
	if err != nil || len(list) != 0 || meta.LastContact != 1234*time.Millisecond || !meta.KnownLeader {
		t.Fatalf("stale list = %+v %+v, %v", list, meta, err)
	}
	// The event stream passes through the follower as it happens.
	sctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	events := make(chan api.Event, 8)
	go func() {
		_ = f.c.Events(sctx, created.Bundle.CreateIndex-1, func(ev api.Event) error { events <- ev; return nil })
	}()
	if ev := <-events; ev.Type != api.EventBundleCreated || ev.BundleID != "b1" {
		t.Fatalf("first event via follower = %+v", ev)
	}
	if _, err := f.c.Cordon(ctx(t), "n1"); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != api.EventNodeStatus || ev.NodeID != "n1" {
		t.Fatalf("live event via follower = %+v", ev)
	}
	cancel()
	// Writes with a body reach the leader.
	if _, err := f.c.PutPool(ctx(t), api.Pool{Name: "p9"}); err != nil || l.b.State().Pool("p9") == nil {
		t.Fatalf("put pool via follower: %v", err)
	}
}

// countHandler counts requests reaching a server.
type countHandler struct {
	h http.Handler
	n atomic.Int64
}

func (c *countHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

// Two followers that each believe the other leads must not bounce a
// request between them: the second hop answers 503 noLeader.
func TestForwardLoopGuard(t *testing.T) {
	ba, bb := newTestBackend("a"), newTestBackend("b")
	ca, cb := &countHandler{h: New(Config{Backend: ba}).Handler()}, &countHandler{h: New(Config{Backend: bb}).Handler()}
	sa, sb := httptest.NewServer(ca), httptest.NewServer(cb)
	defer sa.Close()
	defer sb.Close()
	ba.setFollower(raftstore.LeaderInfo{ID: "b", HTTPAddr: sb.URL}, 0)
	bb.setFollower(raftstore.LeaderInfo{ID: "a", HTTPAddr: sa.URL}, 0)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, sa.URL+"/v1/bundles", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || errorBody(t, raw).Code != api.CodeNoLeader ||
			resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("%s loop = %d %v %s", method, resp.StatusCode, resp.Header, raw)
		}
	}
	if ca.n.Load() != 2 || cb.n.Load() != 2 {
		t.Fatalf("requests seen: a=%d b=%d, want 2 each", ca.n.Load(), cb.n.Load())
	}
}

// A leader deposed between the check and Apply forwards the write once
// more, to the new leader.
func TestWriteForwardedOnceMoreAfterNotLeader(t *testing.T) {
	newLeader := leaderEnv(t)
	seedCluster(t, newLeader.b)
	old := newEnv(t, newTestBackend("s0"))
	seedCluster(t, old.b)
	old.b.set(func(b *testBackend) {
		b.applyErr = raftstore.ErrNotLeader
		b.leaderInfo = raftstore.LeaderInfo{ID: "s1", HTTPAddr: newLeader.hs.URL}
	})
	created, err := old.c.CreateBundle(ctx(t), validSpec("b1"))
	if err != nil || !created.Created || newLeader.b.State().Bundle("b1") == nil {
		t.Fatalf("create = %+v, %v", created, err)
	}
	// A read barrier that finds leadership gone forwards as well.
	old.b.set(func(b *testBackend) { b.barrierErr = raftstore.ErrNotLeader })
	if b, _, err := old.c.Bundle(ctx(t), "b1", nil); err != nil || b.ID != "b1" {
		t.Fatalf("read after deposition = %+v, %v", b, err)
	}
}

func TestNoLeader(t *testing.T) {
	e := newEnv(t, newTestBackend("s2"))
	e.b.setNoLeader()
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/bundles", ""}, {"GET", "/v1/status/leader", ""}, {"POST", "/v1/bundles", bundle(nil)},
		{"PUT", "/v1/nodes/n1", `{"pool":"p1","totalCapacity":1}`}, {"GET", "/v1/events", ""},
		{"GET", "/v1/operator/snapshot", ""}, {"PUT", "/v1/operator/snapshot", "x"},
	} {
		resp, raw := e.do(tc.method, tc.path, []byte(tc.body))
		if resp.StatusCode != http.StatusServiceUnavailable || errorBody(t, raw).Code != api.CodeNoLeader ||
			resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("%s %s = %d %v %s", tc.method, tc.path, resp.StatusCode, resp.Header, raw)
		}
	}
	h, err := e.c.Health(ctx(t))
	if err != nil || h.KnownLeader || h.IsLeader {
		t.Fatalf("health without leader = %+v, %v", h, err)
	}
	// The client retries idempotent requests until a leader appears.
	l := leaderEnv(t)
	seedCluster(t, l.b)
	seen := &countingTransport{}
	c, err := api.New(e.hs.URL, api.WithMaxRetries(10), api.WithHTTPClient(seen.client()))
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		pools []api.Pool
		err   error
	}
	answered := make(chan answer, 1)
	go func() {
		pools, _, err := c.Pools(ctx(t), nil)
		answered <- answer{pools, err}
	}()
	// The leader appears only once the client has been told there is none.
	poll.Eventually(t, 10*time.Second, "a noLeader answer to the client", func() error {
		return poll.Check(seen.unavailable.Load() > 0, "no 503 yet")
	})
	e.b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: l.hs.URL}, 0)
	if a := <-answered; a.err != nil || len(a.pools) != 1 {
		t.Fatalf("retried read = %+v, %v", a.pools, a.err)
	}
}

func TestOutcomeUnknown(t *testing.T) {
	for _, applyErr := range []error{
		raftstore.ErrOutcomeUnknown, context.DeadlineExceeded, errors.New("raft: leadership lost while committing log"),
	} {
		e := leaderEnv(t)
		seedCluster(t, e.b)
		e.b.set(func(b *testBackend) { b.applyErr = applyErr })
		_, err := e.c.CreateBundle(ctx(t), validSpec("b1"))
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeOutcomeUnknown {
			t.Fatalf("apply error %v answered %v", applyErr, err)
		}
	}
	// Definite failures stay definite: not queued means noLeader.
	e := leaderEnv(t)
	e.b.set(func(b *testBackend) { b.applyErr = raftstore.ErrNoLeader })
	if _, err := e.c.PutPool(ctx(t), api.Pool{Name: "p"}); !api.IsCode(err, api.CodeNoLeader) {
		t.Fatalf("no leader at apply: %v", err)
	}
}

// A forwarded write whose leader connection breaks after sending has an
// unknown outcome; one whose leader cannot be dialled has none.
func TestForwardFailures(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer broken.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	_ = l.Close()

	for _, tc := range []struct {
		leader, method, path, body string
		code                       string
	}{
		{broken.URL, "POST", "/v1/bundles", bundle(nil), api.CodeOutcomeUnknown},
		{broken.URL, "GET", "/v1/bundles", "", api.CodeNoLeader},
		{closedAddr, "POST", "/v1/bundles", bundle(nil), api.CodeNoLeader},
	} {
		f := newEnv(t, newTestBackend("s2"))
		f.b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: tc.leader}, 0)
		resp, raw := f.do(tc.method, tc.path, []byte(tc.body))
		if resp.StatusCode != http.StatusServiceUnavailable || errorBody(t, raw).Code != tc.code {
			t.Fatalf("%s %s via %s = %d %s", tc.method, tc.path, tc.leader, resp.StatusCode, raw)
		}
	}
}

// TestForwardToWrongServerRefused: a follower whose leader address now
// belongs to another server (address reuse) gets noLeader, and the server
// at that address changes nothing.
func TestForwardToWrongServerRefused(t *testing.T) {
	impostor := leaderEnv(t) // a leader, but of id s1, not the s9 the follower believes in
	seedCluster(t, impostor.b)
	follower := newEnv(t, newTestBackend("s2"))
	follower.b.setFollower(raftstore.LeaderInfo{ID: "s9", HTTPAddr: impostor.hs.URL}, 0)
	before := stateHash(t, impostor.b.State())
	resp, raw := follower.do(http.MethodPut, "/v1/pools/px", mustJSON(t, api.Pool{Name: "px"}))
	if resp.StatusCode != http.StatusServiceUnavailable || errorBody(t, raw).Code != api.CodeNoLeader {
		t.Fatalf("forward to the wrong server: %d %s", resp.StatusCode, raw)
	}
	if stateHash(t, impostor.b.State()) != before {
		t.Fatal("the wrong server applied a forwarded write")
	}
	// The right target still works.
	follower.b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: impostor.hs.URL}, 0)
	if resp, raw := follower.do(http.MethodPut, "/v1/pools/px", mustJSON(t, api.Pool{Name: "px"})); resp.StatusCode != http.StatusOK {
		t.Fatalf("forward to the right server: %d %s", resp.StatusCode, raw)
	}
}

// frozenServer answers nothing until its caller leaves: a process that
// was stopped (SIGSTOP), its connections open. arrived gets a value for
// each request it holds.
func frozenServer(t *testing.T) (hs *httptest.Server, arrived <-chan struct{}) {
	t.Helper()
	release, in := make(chan struct{}), make(chan struct{}, 16)
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		hs.Close()
	})
	return hs, in
}

// TestForwardEndsWhenTheLeaderChanges: a leader that stopped (SIGSTOP)
// keeps the forwarded request's connection open; once this server follows
// another leader the forward ends, a read with noLeader (ask again) and a
// write with outcomeUnknown (the old leader may have appended it), instead
// of waiting for the stopped one to resume.
func TestForwardEndsWhenTheLeaderChanges(t *testing.T) {
	frozen, arrived := frozenServer(t)
	for _, tc := range []struct {
		method, path, body, code string
	}{
		{"GET", "/v1/bundles", "", api.CodeNoLeader},
		{"POST", "/v1/bundles", bundle(nil), api.CodeOutcomeUnknown},
	} {
		f := newEnv(t, newTestBackend("s2"))
		f.b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: frozen.URL}, 0)
		answered := make(chan *http.Response, 1)
		var raw []byte
		go func() {
			resp, b := f.do(tc.method, tc.path, []byte(tc.body))
			raw = b
			answered <- resp
		}()
		select {
		case resp := <-answered:
			t.Fatalf("%s %s answered %d %s while its leader was frozen", tc.method, tc.path, resp.StatusCode, raw)
		case <-arrived: // the forward reached the frozen leader and waits on it
		}
		f.b.setFollower(raftstore.LeaderInfo{ID: "s3", HTTPAddr: "http://s3.invalid"}, 0)
		resp := <-answered // without the change's effect, waits until the test times out
		if resp.StatusCode != http.StatusServiceUnavailable || errorBody(t, raw).Code != tc.code {
			t.Fatalf("%s %s after the leader changed = %d %s, want 503 %s", tc.method, tc.path, resp.StatusCode, raw, tc.code)
		}
	}
}
