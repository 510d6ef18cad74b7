package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/ledger"
	"github.com/amserver/amserver/raftstore"
)

// testBackend is a Backend around a real FSM that applies commands with
// consecutive raft indexes. It can play leader, follower or leaderless.
type testBackend struct {
	fsm     *fsm.FSM
	watches atomic.Int64 // WatchCh calls: a blocking read takes one before it blocks

	mu          sync.Mutex
	id          string
	index       uint64
	applies     int // commands that reached Apply (accepted or rejected by the FSM)
	leader      bool
	leaderInfo  raftstore.LeaderInfo
	hasLeader   bool
	applyErr    error
	barrierErr  error
	barrierHang bool // ReadBarrier waits for its context: a leader that lost its quorum
	lastContact time.Duration
	members     []gossip.Member
	plan        func(fsm.BundleSpec) (PlanResult, error)
	panicOn     string // "members": Members panics
	transferred []string
	removed     []string
	servers     []raftstore.Peer // the Raft configuration when set; else this server and "other"
	level       int              // the level every server applies (ServersApply); 0: fsm.CommandLevel
	bodies      []any            // the bodies of the commands Apply took, in order
}

var _ Backend = (*testBackend)(nil)

func newTestBackend(id string) *testBackend {
	b := &testBackend{fsm: fsm.New(fsm.Config{}), id: id}
	b.setLeader("http://" + id + ".invalid")
	return b
}

func (b *testBackend) setLeader(httpAddr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leader, b.hasLeader = true, true
	b.leaderInfo = raftstore.LeaderInfo{ID: b.id, RaftAddr: b.id + ":7071", HTTPAddr: httpAddr}
	b.lastContact = 0
}

func (b *testBackend) setFollower(leader raftstore.LeaderInfo, lastContact time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leader, b.hasLeader, b.leaderInfo, b.lastContact = false, true, leader, lastContact
}

func (b *testBackend) setNoLeader() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leader, b.hasLeader, b.leaderInfo = false, false, raftstore.LeaderInfo{}
}

func (b *testBackend) set(fn func(b *testBackend)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn(b)
}

func (b *testBackend) State() *fsm.State { return b.fsm.State() }
func (b *testBackend) WatchCh() <-chan struct{} {
	b.watches.Add(1)
	return b.fsm.WatchCh()
}

// waitWatching waits until a read started after the backend counted
// before WatchCh calls has taken a watch channel: any change from then on
// wakes it, so a test can change the state knowing the read is blocked.
func (b *testBackend) waitWatching(t *testing.T, before int64) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, "the read to block", func() error {
		return poll.Check(b.watches.Load() > before, "%d WatchCh calls, as before the read", b.watches.Load())
	})
}
func (b *testBackend) ServerID() string { return b.id }
func (b *testBackend) Now() time.Time   { return time.Unix(1_800_000_000, 0) }

func (b *testBackend) ServersApply(level int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.level == 0 {
		return level <= fsm.CommandLevel
	}
	return level <= b.level
}

func (b *testBackend) Apply(ctx context.Context, t fsm.MessageType, body any) (*fsm.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applyErr != nil {
		return nil, b.applyErr
	}
	if !b.leader {
		return nil, raftstore.ErrNotLeader
	}
	return b.applyLocked(t, body)
}

func (b *testBackend) applyLocked(t fsm.MessageType, body any) (*fsm.Result, error) {
	b.bodies = append(b.bodies, body)
	data, err := fsm.Encode(t, body)
	if err != nil {
		return nil, err
	}
	b.index++
	b.applies++
	res := b.fsm.Apply(&raft.Log{Type: raft.LogCommand, Index: b.index, Term: 1, Data: data})
	return res.(*fsm.Result), nil
}

// mustApply seeds state directly, as if another server had written it.
func (b *testBackend) mustApply(t testing.TB, typ fsm.MessageType, body any) *fsm.Result {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	res, err := b.applyLocked(typ, body)
	if err != nil || res.Err != nil {
		t.Fatalf("seed %s: %v / %v", typ, err, res.Err)
	}
	return res
}

func (b *testBackend) applyCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.applies
}

func (b *testBackend) IsLeader() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leader
}

func (b *testBackend) Leader() (raftstore.LeaderInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leaderInfo, b.hasLeader
}

func (b *testBackend) ReadBarrier(ctx context.Context, mode raftstore.ReadMode) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.barrierHang {
		b.mu.Unlock()
		<-ctx.Done()
		b.mu.Lock()
		return fmt.Errorf("%w: %w", raftstore.ErrNoLeader, ctx.Err())
	}
	if b.barrierErr != nil {
		return b.barrierErr
	}
	if !b.leader {
		return raftstore.ErrNotLeader
	}
	return nil
}

func (b *testBackend) LastContact() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastContact
}

func (b *testBackend) RaftInfo(ctx context.Context) (raftstore.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	state := "follower"
	if b.leader {
		state = "leader"
	}
	servers := b.servers
	if servers == nil {
		servers = []raftstore.Peer{
			{ID: b.id, Address: b.id + ":7071", Suffrage: "voter", Leader: b.leader},
			{ID: "other", Address: "other:7071", Suffrage: "voter", Leader: !b.leader && b.hasLeader},
		}
	}
	return raftstore.Info{
		State: state, Term: 3, LastIndex: b.index, CommitIndex: b.index, AppliedIndex: b.index,
		Servers: slices.Clone(servers), LogStore: raftstore.LogStoreWAL,
	}, nil
}

func (b *testBackend) TransferLeadership(ctx context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.transferred = append(b.transferred, id)
	return nil
}

func (b *testBackend) RemovePeer(ctx context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id != "other" {
		return fmtNotFound("peer %s", id)
	}
	b.removed = append(b.removed, id)
	return nil
}

func (b *testBackend) Members() []gossip.Member {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panicOn == "members" {
		panic("members exploded")
	}
	return append([]gossip.Member(nil), b.members...)
}

func (b *testBackend) Member(name string) (gossip.Member, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.members {
		if m.Name == name {
			return m, true
		}
	}
	return gossip.Member{}, false
}

// snapSink adapts a writer to raft.SnapshotSink for FSM.Snapshot.
type snapSink struct{ io.Writer }

func (snapSink) ID() string    { return "test" }
func (snapSink) Cancel() error { return nil }
func (snapSink) Close() error  { return nil }

func (b *testBackend) SaveSnapshot(ctx context.Context, w io.Writer) error {
	snap, err := b.fsm.Snapshot()
	if err != nil {
		return err
	}
	return snap.Persist(snapSink{w})
}

func (b *testBackend) RestoreSnapshot(ctx context.Context, r io.Reader) error {
	if err := b.fsm.Restore(io.NopCloser(r)); err != nil {
		return errorsJoinInvalid(err)
	}
	return nil
}

func (b *testBackend) Plan(ctx context.Context, spec fsm.BundleSpec) (PlanResult, error) {
	b.mu.Lock()
	plan := b.plan
	b.mu.Unlock()
	if plan == nil {
		return PlanResult{}, ErrNotImplemented
	}
	return plan(spec)
}

// env is one API server over a test backend, with a client.
type env struct {
	t  *testing.T
	b  *testBackend
	s  *Server
	hs *httptest.Server
	c  *api.Client
}

func newEnv(t *testing.T, b *testBackend, cfg ...func(*Config)) *env {
	t.Helper()
	conf := Config{Backend: b, Metrics: testMetricsHandler()}
	for _, f := range cfg {
		f(&conf)
	}
	s := New(conf)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.stop() // end blocking queries and streams so Close does not wait
		hs.Close()
	})
	c, err := api.New(hs.URL, api.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, b: b, s: s, hs: hs, c: c}
}

func leaderEnv(t *testing.T) *env {
	t.Helper()
	b := newTestBackend("s1")
	e := newEnv(t, b)
	b.setLeader(e.hs.URL)
	return e
}

// do sends a raw request and returns the response with its body read.
func (e *env) do(method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.hs.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, out
}

// errorBody decodes an error answer, failing on any other shape.
func errorBody(t *testing.T, raw []byte) *api.Error {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil || len(body) != 1 || body["error"] == nil {
		t.Fatalf("not an error body: %s", raw)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body["error"], &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"code", "message", "errors", "warnings"} {
		if _, ok := fields[k]; !ok {
			t.Fatalf("error body lacks %q: %s", k, raw)
		}
	}
	var e api.ErrorBody
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Errors == nil || e.Error.Warnings == nil {
		t.Fatalf("errors and warnings must be arrays, not null: %s", raw)
	}
	return e.Error
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stateHash digests every table reachable through State, plus its index.
func stateHash(t testing.TB, st *fsm.State) string {
	t.Helper()
	var assignments []*fsm.Assignment
	for _, n := range st.Nodes("") {
		assignments = append(assignments, st.NodeAssignments(n.ID)...)
	}
	return string(mustJSON(t, []any{
		st.Index(), st.Nodes(""), st.Pools(), st.Bundles("", ""), st.Reservations(),
		st.Services(), st.Events(0, 0), assignments,
	}))
}

// seedCluster writes a pool, a ready node with GPUs, cores and a
// capability, and a node service.
func seedCluster(t testing.TB, b *testBackend) {
	t.Helper()
	b.mustApply(t, fsm.UpsertPoolType, fsm.UpsertPoolRequest{Pool: fsm.Pool{
		Name: "p1", Kind: fsm.PoolCluster, Scoring: fsm.ScoringBinpack,
		Tiers: []fsm.Tier{{Name: "onprem", Cloud: "dc"}, {Name: "burst", Cloud: "aws"}},
	}})
	b.mustApply(t, fsm.RegisterNodeType, fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: "n1", Pool: "p1", TotalCapacity: 8000, UtilizationCap: 1000, TotalCores: 8,
		GPUs:         []ledger.GPU{{Index: 0, Model: "a10", Capacity: 1000}},
		Capabilities: []ledger.Capability{{Name: "nic", Count: 2}},
		Labels:       map[string]string{"rack": "r1"},
	}})
	b.mustApply(t, fsm.NodeStatusType, fsm.NodeStatusRequest{NodeID: "n1", Status: fsm.NodeReady, AZ: "az1", Cloud: "dc"})
}

// placeBundle creates bundle id with one job and places it on n1.
func placeBundle(t testing.TB, b *testBackend, id string) {
	t.Helper()
	b.mustApply(t, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: fsm.BundleSpec{
		ID: id, Pool: "p1", Priority: fsm.PrioritySilver, Placement: fsm.Placement{SameAz: fsm.SameAzOff},
		Jobs: []fsm.Job{{Name: "enc", Requirements: ledger.Request{Capacity: 1500, Cores: 2, GPUCapacity: 250},
			Launch: fsm.Launch{Driver: fsm.DriverNone}}},
	}})
	res := b.mustApply(t, fsm.ApplyPlanType, fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{{
		BundleID: id, Place: []fsm.Place{{Slot: 0, Job: "enc", Node: "n1",
			Grant: ledger.Grant{Capacity: 1500, Cores: []int{0, 1}, GPU: &ledger.GPUShare{Index: 0, Capacity: 250}}}},
	}}}}})
	if pr := res.Value.(*fsm.PlanResult); len(pr.Committed) != 1 {
		t.Fatalf("plan rejected: %+v", pr.Rejected)
	}
}

func validSpec(id string) api.BundleSpec {
	return api.BundleSpec{
		ID: id, Pool: "p1",
		Jobs: []api.Job{{Name: "enc", Requirements: api.Requirements{Capacity: 2.5, Cores: 1}}},
		Tags: map[string]string{"team": "video"},
	}
}
