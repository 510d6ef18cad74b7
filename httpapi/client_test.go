package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestStatusHealthMembers(t *testing.T) {
	e := leaderEnv(t)
	seen := time.Unix(1_800_000_100, 0)
	e.b.set(func(b *testBackend) {
		b.members = []gossip.Member{{Name: "n1", Addr: "10.0.0.1", Port: 7072, Status: gossip.StatusAlive, LastSeen: seen,
			Meta: gossip.Meta{Role: gossip.RoleWorker, AZ: "az1", Cloud: "dc", Pool: "p1", Tags: map[string]string{"k": "v"}}}}
		b.servers = []raftstore.Peer{{ID: "s1", Address: "s1:7071", Suffrage: "voter", Leader: true},
			{ID: "n1", Address: "n1:7071", Suffrage: "voter"}, {ID: "gone", Address: "gone:7071", Suffrage: "voter"}}
	})
	l, err := e.c.Leader(ctx(t))
	if err != nil || l.ID != "s1" || l.HTTPAddr != e.hs.URL || l.RaftAddr != "s1:7071" {
		t.Fatalf("leader = %+v, %v", l, err)
	}
	peers, err := e.c.Peers(ctx(t))
	if err != nil || len(peers) != 3 || !peers[0].Leader || peers[0].Suffrage != "voter" {
		t.Fatalf("peers = %+v, %v", peers, err)
	}
	// Status is the answering server's gossip view, by the peer's id.
	if peers[1].Status != "alive" || peers[2].Status != api.PeerUnknown {
		t.Fatalf("peer statuses = %q, %q; want alive (a member), unknown (none)", peers[1].Status, peers[2].Status)
	}
	h, err := e.c.Health(ctx(t))
	if err != nil || h.Status != "ok" || !h.IsLeader || h.Leader != "s1" || h.Peers != 3 {
		t.Fatalf("health = %+v, %v", h, err)
	}
	members, err := e.c.Members(ctx(t))
	want := map[string]string{"az": "az1", "cloud": "dc", "pool": "p1", "k": "v"}
	if err != nil || len(members) != 1 || members[0].Role != "worker" || members[0].Address != "10.0.0.1:7072" ||
		!reflect.DeepEqual(members[0].Labels, want) || !members[0].LastSeen.Equal(seen) {
		t.Fatalf("members = %+v, %v", members, err)
	}
	rc, meta, err := e.c.RaftConfiguration(ctx(t), nil)
	if err != nil || rc.State != "leader" || rc.Leader == nil || rc.Leader.ID != "s1" || len(rc.Servers) != 3 ||
		rc.Servers[1].Status != "alive" || meta.Index < 1 {
		t.Fatalf("raft = %+v %+v, %v", rc, meta, err)
	}
	if err := e.c.TransferLeadership(ctx(t), "other"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.RemovePeer(ctx(t), "other"); err != nil {
		t.Fatal(err)
	}
	// n1 is alive in gossip: the leader would add it back at once.
	if err := e.c.RemovePeer(ctx(t), "n1"); !api.IsCode(err, api.CodeConflict) || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("removing a live server: %v, want a conflict saying to stop it first", err)
	}
	if err := e.c.RemovePeer(ctx(t), "ghost"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("remove unknown peer: %v", err)
	}
	if !reflect.DeepEqual(e.b.transferred, []string{"other"}) || !reflect.DeepEqual(e.b.removed, []string{"other"}) {
		t.Fatalf("operator calls: %v %v", e.b.transferred, e.b.removed)
	}
}

func TestPoolsAndServices(t *testing.T) {
	e := leaderEnv(t)
	in := api.Pool{Name: "gpu", Tiers: []api.Tier{{Name: "t0", Cloud: "dc"}}, Caps: api.PoolCaps{MaxCapacity: 100.5, MaxCores: 64},
		Defaults: api.PoolDefaults{Capacity: 0.25, Cores: 1}}
	p, err := e.c.PutPool(ctx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != api.PoolCluster || p.Scoring != api.ScoringBinpack || p.Caps.MaxCapacity != 100.5 ||
		p.Defaults.Capacity != 0.25 || p.CreateIndex == 0 {
		t.Fatalf("pool = %+v", p)
	}
	got, meta, err := e.c.Pool(ctx(t), "gpu", nil)
	if err != nil || !reflect.DeepEqual(got, p) || meta.Index != p.ModifyIndex || !meta.KnownLeader {
		t.Fatalf("get pool = %+v %+v, %v", got, meta, err)
	}
	// A pool read back can be put again: read-only fields are ignored.
	got.Warm = 2
	if _, err := e.c.PutPool(ctx(t), *got); err != nil {
		t.Fatal(err)
	}
	svc, err := e.c.PutService(ctx(t), api.NodeService{ID: "ptp", Pools: []string{"gpu"},
		Provides: []api.Capability{{Name: "ptp-clock", Count: 1}}})
	if err != nil || svc.Lifecycle != "eager" || !legacyDriver(svc.Launch, api.DriverNone) {
		t.Fatalf("service = %+v, %v", svc, err)
	}
	list, _, err := e.c.Services(ctx(t), nil)
	if err != nil || len(list) != 1 || list[0].ID != "ptp" {
		t.Fatalf("services = %+v, %v", list, err)
	}
	if err := e.c.DeletePool(ctx(t), "gpu"); !api.IsCode(err, api.CodeInUse) {
		t.Fatalf("delete pool used by a service: %v", err)
	}
	if err := e.c.DeleteService(ctx(t), "ptp"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.Service(ctx(t), "ptp", nil); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("deleted service: %v", err)
	}
	if err := e.c.DeletePool(ctx(t), "gpu"); err != nil {
		t.Fatal(err)
	}
	pools, _, err := e.c.Pools(ctx(t), nil)
	if err != nil || len(pools) != 0 || pools == nil {
		t.Fatalf("pools = %#v, %v", pools, err)
	}
}

func TestNodes(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	n, err := e.c.RegisterNode(ctx(t), api.NodeSpec{ID: "n2", Pool: "p2", TotalCapacity: 4, TotalCores: 4,
		GPUs: []api.GPU{{Index: 0, Model: "t4", TotalCapacity: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if n.UtilizationCap != 1 || n.Allocatable != 4 || n.Status != api.NodeUnknown || n.GPUs[0].TotalCapacity != 1 {
		t.Fatalf("registered = %+v", n)
	}
	if _, _, err := e.c.Pool(ctx(t), "p2", nil); err != nil {
		t.Fatalf("registering into a new pool creates it: %v", err)
	}
	n1, _, err := e.c.Node(ctx(t), "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReserved := api.Reserved{Capacity: 1.5, Cores: 2, CoreSet: []int{0, 1},
		GPUs: []api.GPUReserved{{Index: 0, Capacity: 0.25}}, Capabilities: []api.CapabilityCount{}}
	if !reflect.DeepEqual(n1.Reserved, wantReserved) || n1.Tier != "onprem" || n1.Assignments != 1 ||
		n1.Status != api.NodeReady || n1.Labels["az"] != "az1" {
		t.Fatalf("n1 = %+v", n1)
	}
	if n1.OutsideTiers || n.OutsideTiers {
		t.Fatalf("a node of a tier (n1) or of a pool without tiers (n2) reads outside the tiers: %v, %v", n1.OutsideTiers, n.OutsideTiers)
	}
	// A node whose cloud is in none of p1's tiers: placement passes it by.
	e.b.mustApply(t, fsm.RegisterNodeType, fsm.RegisterNodeRequest{Node: fsm.Node{ID: "n3", Pool: "p1", TotalCapacity: 1000, UtilizationCap: 1000}})
	e.b.mustApply(t, fsm.NodeStatusType, fsm.NodeStatusRequest{NodeID: "n3", Status: fsm.NodeReady, AZ: "az1", Cloud: "gcp"})
	n3, _, err := e.c.Node(ctx(t), "n3", nil)
	if err != nil || !n3.OutsideTiers || n3.Tier != "" {
		t.Fatalf("n3 = %+v, %v; want outside p1's tiers", n3, err)
	}
	inP1, _, err := e.c.Nodes(ctx(t), api.NodeFilter{Pool: "p1"}, nil)
	if err != nil || len(inP1) != 2 || inP1[0].OutsideTiers || !inP1[1].OutsideTiers {
		t.Fatalf("p1 nodes = %+v, %v; want n3 (only) outside the tiers", inP1, err)
	}
	if err := e.c.DeregisterNode(ctx(t), "n3", false); err != nil {
		t.Fatal(err)
	}
	ready, _, err := e.c.Nodes(ctx(t), api.NodeFilter{Status: api.NodeReady}, nil)
	if err != nil || len(ready) != 1 || ready[0].ID != "n1" {
		t.Fatalf("ready nodes = %+v, %v", ready, err)
	}
	inP2, _, err := e.c.Nodes(ctx(t), api.NodeFilter{Pool: "p2"}, nil)
	if err != nil || len(inP2) != 1 || inP2[0].ID != "n2" {
		t.Fatalf("p2 nodes = %+v, %v", inP2, err)
	}
	for _, step := range []struct {
		call               func(context.Context, string) (*api.Node, error)
		cordoned, draining bool
	}{{e.c.Cordon, true, false}, {e.c.Uncordon, false, false}, {e.c.Drain, true, true}, {e.c.Uncordon, false, false}} {
		got, err := step.call(ctx(t), "n1")
		if err != nil || got.Cordoned != step.cordoned || got.Draining != step.draining {
			t.Fatalf("flags = %+v, %v; want cordoned %v draining %v", got, err, step.cordoned, step.draining)
		}
	}
	if err := e.c.DeregisterNode(ctx(t), "n1", false); !api.IsCode(err, api.CodeInUse) {
		t.Fatalf("deregister busy node: %v", err)
	}
	// A worker alive in gossip would register its node again at once.
	e.b.set(func(b *testBackend) {
		b.members = []gossip.Member{{Name: "n1", Status: gossip.StatusAlive, Meta: gossip.Meta{Role: gossip.RoleWorker}}}
	})
	if err := e.c.DeregisterNode(ctx(t), "n1", true); !api.IsCode(err, api.CodeConflict) || !strings.Contains(err.Error(), "stop the worker first") {
		t.Fatalf("deregister a node whose worker is alive: %v", err)
	}
	if _, _, err := e.c.Node(ctx(t), "n1", nil); err != nil {
		t.Fatalf("the refused deregistration removed the node: %v", err)
	}
	// One the servers refuse registers afresh: what deregistering is for.
	e.b.set(func(b *testBackend) {
		b.members[0].Meta.Tags = map[string]string{gossip.TagRegistration: gossip.RegistrationRefused}
	})
	if err := e.c.DeregisterNode(ctx(t), "n1", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.Node(ctx(t), "n1", nil); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("deregistered node: %v", err)
	}
}

func TestAssignmentsAndStatus(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	list, meta, err := e.c.Assignments(ctx(t), "n1", nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("assignments = %+v, %v", list, err)
	}
	a := list[0]
	if a.BundleID != "b1" || a.Job != "enc" || a.Role != api.RolePrimary || a.Desired != api.DesiredRun ||
		a.Epoch != 1 || a.Capacity != 1.5 || !reflect.DeepEqual(a.Cores, []int{0, 1}) ||
		a.GPU == nil || a.GPU.Capacity != 0.25 || !legacyDriver(a.Launch, api.DriverNone) || a.Runtime != api.DriverNone {
		t.Fatalf("assignment = %+v", a)
	}
	if err := e.c.ReportStatus(ctx(t), "n1", a.ID, api.AssignmentStatus{State: api.JobRunning, Message: "up"}); err != nil {
		t.Fatal(err)
	}
	list, meta2, err := e.c.Assignments(ctx(t), "n1", nil)
	if err != nil || list[0].Status != api.JobRunning || list[0].Message != "up" || meta2.Index <= meta.Index {
		t.Fatalf("after report = %+v %+v, %v", list, meta2, err)
	}
	b, _, err := e.c.Bundle(ctx(t), "b1", nil)
	if err != nil || b.State != api.StatePlaced || b.Replicas[0].Jobs[0].Status != api.JobRunning ||
		b.Replicas[0].Jobs[0].NodeID != "n1" || b.Replicas[0].Epoch != 1 {
		t.Fatalf("bundle = %+v, %v", b, err)
	}
	err = e.c.ReportStatus(ctx(t), "n2", a.ID, api.AssignmentStatus{State: api.JobRunning})
	if !api.IsCode(err, api.CodeConflict) {
		t.Fatalf("report from the wrong node: %v", err)
	}
	if _, _, err := e.c.Assignments(ctx(t), "ghost", nil); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("unknown node's assignments: %v", err)
	}
}

func TestBundleLifecycle(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	spec := validSpec("")
	spec.StartAt = "2030-01-02T03:04:05Z"
	spec.Resilience = &api.Resilience{SameNode: api.Forbid}
	created, err := e.c.CreateBundle(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	b := created.Bundle
	if !created.Created || len(b.ID) != api.IDLength || b.Priority != api.PrioritySilver || b.Placement.SameAz != api.SameAzOff ||
		b.Resilience.SameAz != api.Allow || b.StartAt != spec.StartAt || len(b.Replicas) != 2 ||
		b.Replicas[1].Role != api.RoleBackup || b.Jobs[0].Requirements.Capacity != 2.5 || !legacyDriver(b.Jobs[0].Launch, api.DriverNone) {
		t.Fatalf("created = %+v", created)
	}
	if created.Warnings == nil {
		t.Fatal("warnings must be an array")
	}
	got, meta, err := e.c.Bundle(ctx(t), b.ID, nil)
	if err != nil || !reflect.DeepEqual(*got, b) || meta.Index != b.ModifyIndex {
		t.Fatalf("get = %+v, %v", got, err)
	}
	list, _, err := e.c.Bundles(ctx(t), api.BundleFilter{Pool: "p1", State: b.State}, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	none, _, err := e.c.Bundles(ctx(t), api.BundleFilter{State: api.StatePlaced}, nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("placed = %+v, %v", none, err)
	}
	next := b.BundleSpec
	next.Tags = map[string]string{"team": "audio"}
	if _, err := e.c.ReplaceBundle(ctx(t), next, b.ModifyIndex+100); !api.IsCode(err, api.CodeCASMismatch) {
		t.Fatalf("stale cas: %v", err)
	}
	replaced, err := e.c.ReplaceBundle(ctx(t), next, b.ModifyIndex)
	if err != nil || replaced.Bundle.Tags["team"] != "audio" || replaced.Bundle.ModifyIndex <= b.ModifyIndex {
		t.Fatalf("replace = %+v, %v", replaced, err)
	}
	deleted, err := e.c.DeleteBundle(ctx(t), b.ID)
	if err != nil || deleted.State != api.StateDeleting {
		t.Fatalf("delete = %+v, %v", deleted, err)
	}
	if _, err := e.c.DeleteBundle(ctx(t), "ghost"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
}

// Creates are idempotent by id: 201, then 200 for the identical retry, then
// 409 for a different spec under the same id.
func TestIdempotentCreate(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	spec := validSpec("b1")
	first, err := e.c.CreateBundle(ctx(t), spec)
	if err != nil || !first.Created {
		t.Fatalf("first = %+v, %v", first, err)
	}
	before := stateHash(t, e.b.State())
	again, err := e.c.CreateBundle(ctx(t), spec)
	if err != nil || again.Created || again.Bundle.CreateIndex != first.Bundle.CreateIndex {
		t.Fatalf("retry = %+v, %v", again, err)
	}
	resp, _ := e.do(http.MethodPost, "/v1/bundles", mustJSON(t, spec))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("raw retry status %d", resp.StatusCode)
	}
	spec.Jobs[0].Requirements.Capacity = 3
	_, err = e.c.CreateBundle(ctx(t), spec)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeConflict || ae.Status != http.StatusConflict {
		t.Fatalf("different spec: %v", err)
	}
	if after := stateHash(t, e.b.State()); after != before {
		t.Fatal("a retry or a conflicting create changed state")
	}
}

func TestValidateAndPlan(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	before := stateHash(t, e.b.State())
	ok, err := e.c.ValidateBundle(ctx(t), validSpec(""))
	if err != nil || !ok.Valid || len(ok.Errors) != 0 {
		t.Fatalf("validate ok = %+v, %v", ok, err)
	}
	bad := validSpec("b1")
	bad.Pool = "nope"
	bad.Jobs[0].Requirements.Cores = 100
	res, err := e.c.ValidateBundle(ctx(t), bad)
	if err != nil || res.Valid || res.Errors[0].Code != api.FindingUnknownPoolName {
		t.Fatalf("validate bad = %+v, %v", res, err)
	}
	huge := validSpec("b1")
	huge.Jobs[0].Requirements.Cores = 100
	res, err = e.c.ValidateBundle(ctx(t), huge)
	if err != nil || !res.Valid || len(res.Warnings) != 1 || res.Warnings[0].Code != api.FindingUnsatisfiableCores {
		t.Fatalf("validate warning = %+v, %v", res, err)
	}
	if _, err := e.c.PlanBundle(ctx(t), validSpec("")); !api.IsCode(err, api.CodeNotImplemented) {
		t.Fatalf("plan without scheduler: %v", err)
	}
	e.b.set(func(b *testBackend) {
		b.plan = func(spec fsm.BundleSpec) (PlanResult, error) {
			return PlanResult{Explain: &fsm.Explain{NodesEvaluated: 1, Filtered: map[string]int{"capacity": 1},
				NearestMiss: &fsm.NearestMiss{NodeID: "n1", Stage: "capacity", Detail: "short"}},
				Evictions: []api.PlanEviction{{BundleID: "low", Priority: "bronze", Role: "primary", Promoted: true, Jobs: []string{"a"}}}}, nil
		}
	})
	plan, err := e.c.PlanBundle(ctx(t), validSpec("p"))
	if err != nil || plan.Bundle.ID != "p" || plan.Explain.Filtered["capacity"] != 1 || plan.Explain.NearestMiss.NodeID != "n1" ||
		plan.Bundle.Replicas[0].Jobs[0].Name != "enc" {
		t.Fatalf("plan = %+v, %v", plan, err)
	}
	if len(plan.Evictions) != 1 || plan.Evictions[0].BundleID != "low" || !plan.Evictions[0].Promoted || plan.Evictions[0].Role != "primary" {
		t.Fatalf("plan's evictions = %+v", plan.Evictions)
	}
	if stateHash(t, e.b.State()) != before {
		t.Fatal("validate or plan changed state")
	}
}

func TestEventsStream(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	created, err := e.c.CreateBundle(ctx(t), validSpec("b1"))
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	got := make(chan api.Event, 16)
	done := make(chan error, 1)
	// From the bundle's index: earlier node events are skipped.
	go func() {
		done <- e.c.Events(c, created.Bundle.CreateIndex-1, func(ev api.Event) error { got <- ev; return nil })
	}()
	first := <-got
	if first.Type != api.EventBundleCreated || first.BundleID != "b1" || first.Index != created.Bundle.CreateIndex {
		t.Fatalf("first event = %+v", first)
	}
	if _, err := e.c.DeleteBundle(ctx(t), "b1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Cordon(ctx(t), "n1"); err != nil {
		t.Fatal(err)
	}
	live := <-got
	if live.Type != api.EventNodeStatus || live.NodeID != "n1" || live.Index <= first.Index || live.Time.IsZero() {
		t.Fatalf("live event = %+v", live)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("events ended with %v", err)
	}
}

func TestSnapshotSaveRestore(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	want := stateHash(t, e.b.State())
	var buf bytes.Buffer
	if _, err := e.c.SnapshotSave(ctx(t), &buf); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateBundle(ctx(t), validSpec("b2")); err != nil {
		t.Fatal(err)
	}
	if err := e.c.SnapshotRestore(ctx(t), bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := stateHash(t, e.b.State()); got != want {
		t.Fatal("restore did not bring back the saved state")
	}
	err := e.c.SnapshotRestore(ctx(t), bytes.NewReader([]byte("not a snapshot")))
	if !api.IsCode(err, api.CodeValidationFailed) {
		t.Fatalf("bad snapshot: %v", err)
	}
	if got := stateHash(t, e.b.State()); got != want {
		t.Fatal("a bad snapshot changed state")
	}
}

func TestPanicIsInternalError(t *testing.T) {
	e := leaderEnv(t)
	e.b.set(func(b *testBackend) { b.panicOn = "members" })
	resp, body := e.do(http.MethodGet, "/v1/members", nil)
	if resp.StatusCode != http.StatusInternalServerError || errorBody(t, body).Code != api.CodeInternal {
		t.Fatalf("panic answered %d %s", resp.StatusCode, body)
	}
}

// legacyDriver: a launch reads back in the union's legacy form (the older
// {driver} shape is never answered) with the given driver.
func legacyDriver(l api.Launch, driver string) bool {
	return l.Kind == api.LaunchLegacy && l.Job != nil && l.Job.Driver == driver && l.Driver == "" && l.Command == nil && l.Env == nil
}

// An operator's remove-peer shows in the event log as the leader's own
// removals do, so a server added back later does not read as joined twice.
func TestRemovePeerRecordsServerRemoved(t *testing.T) {
	e := leaderEnv(t)
	if err := e.c.RemovePeer(ctx(t), "other"); err != nil {
		t.Fatal(err)
	}
	var got []fsm.Event
	for _, ev := range e.b.State().Events(0, 0) {
		if ev.Type == api.EventServerRemoved {
			got = append(got, ev)
		}
	}
	if len(got) != 1 || got[0].NodeID != "other" || !strings.Contains(got[0].Message, "operator") {
		t.Fatalf("serverRemoved events = %+v, want one for other naming the operator", got)
	}
	// A refused removal records nothing.
	if err := e.c.RemovePeer(ctx(t), "ghost"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("remove unknown peer: %v", err)
	}
	for _, ev := range e.b.State().Events(0, 0) {
		if ev.Type == api.EventServerRemoved && ev.NodeID == "ghost" {
			t.Fatalf("a refused removal recorded %+v", ev)
		}
	}
}
