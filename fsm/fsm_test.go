package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/ledger"
)

func TestCreateBundleIdempotentRetry(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1500, 2))

	first := h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	if !first.Created || first.Value.(*Bundle).State != StatePending {
		t.Fatalf("first create: created=%v value=%+v", first.Created, first.Value)
	}
	retry := h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	if retry.Created {
		t.Fatal("identical retry reported as a new bundle")
	}
	if retry.Value.(*Bundle).CreateIndex != first.Value.(*Bundle).CreateIndex {
		t.Fatal("identical retry returned a different bundle")
	}
	other := spec
	other.Priority = PriorityGold
	res := h.apply(CreateBundleType, &CreateBundleRequest{Spec: other})
	if !errors.Is(res.Err, ErrExists) {
		t.Fatalf("different spec under the same id: err=%v, want ErrExists", res.Err)
	}
}

// TestCreateBundleOverExisting: a create under the id of an existing bundle
// says why it is refused; one being deleted is not "a different spec".
func TestCreateBundleOverExisting(t *testing.T) {
	spec := testBundle("b1", "p", testJob("enc", 1500, 2))
	other := spec
	other.Priority = PriorityGold
	tests := []struct {
		name     string
		deleting bool
		spec     BundleSpec
		want     error
		msg      string
	}{
		{"identical", false, spec, nil, ""},
		{"different spec", false, other, ErrExists, "bundle b1: already exists with a different spec"},
		{"identical while deleting", true, spec, ErrConflict, "bundle b1 is being deleted; submit it again once it is gone"},
		{"different while deleting", true, other, ErrConflict, "bundle b1 is being deleted; submit it again once it is gone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			if tc.deleting {
				h.ok(DeleteBundleType, &DeleteBundleRequest{ID: "b1"})
			}
			res := h.apply(CreateBundleType, &CreateBundleRequest{Spec: tc.spec})
			if tc.want == nil {
				if res.Err != nil || res.Created {
					t.Fatalf("err=%v created=%v, want the existing bundle", res.Err, res.Created)
				}
				return
			}
			if !errors.Is(res.Err, tc.want) || !strings.Contains(res.Err.Error(), tc.msg) {
				t.Fatalf("err=%v, want %v saying %q", res.Err, tc.want, tc.msg)
			}
		})
	}
}

func TestReplaceBundleCAS(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1000, 0))
	b := h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec}).Value.(*Bundle)

	tagged := spec
	tagged.Tags = map[string]string{"team": "video"}
	stale := h.apply(ReplaceBundleType, &ReplaceBundleRequest{Spec: tagged, CAS: b.ModifyIndex + 100})
	if !errors.Is(stale.Err, ErrCASMismatch) {
		t.Fatalf("stale CAS: err=%v", stale.Err)
	}
	nb := h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: tagged, CAS: b.ModifyIndex}).Value.(*Bundle)
	if nb.Spec.Tags["team"] != "video" || nb.ModifyIndex <= b.ModifyIndex {
		t.Fatalf("replace did not apply: %+v", nb)
	}
	again := h.apply(ReplaceBundleType, &ReplaceBundleRequest{Spec: tagged, CAS: b.ModifyIndex})
	if !errors.Is(again.Err, ErrCASMismatch) {
		t.Fatalf("reused CAS must fail: %v", again.Err)
	}
	missing := h.apply(ReplaceBundleType, &ReplaceBundleRequest{Spec: testBundle("nope", "p", testJob("x", 1, 0))})
	if !errors.Is(missing.Err, ErrNotFound) {
		t.Fatalf("replace of a missing bundle: %v", missing.Err)
	}
}

func TestReplaceKeepsPlacementUnlessItMatters(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1000, 1))
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})

	tagged := spec
	tagged.Priority = PriorityGold
	b := h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: tagged}).Value.(*Bundle)
	if b.State != StatePlaced {
		t.Fatalf("priority change dropped the placement: %s", b.State)
	}
	jobBand := tagged
	jobBand.Jobs = []Job{testJob("enc", 1000, 1)}
	jobBand.Jobs[0].Priority = PriorityBronze
	b = h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: jobBand}).Value.(*Bundle)
	if b.State != StatePlaced || b.Spec.Jobs[0].Priority != PriorityBronze {
		t.Fatalf("a job's priority change dropped the placement or was lost: %s %+v", b.State, b.Spec.Jobs[0])
	}
	bigger := tagged
	bigger.Jobs = []Job{testJob("enc", 2000, 1)}
	b = h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: bigger}).Value.(*Bundle)
	if b.State != StatePending || len(h.fsm.State().Reservations()) != 0 {
		t.Fatalf("requirement change must re-queue and release: state=%s", b.State)
	}
	checkInvariants(t, h.fsm)
}

// TestJobReportMirrorsMessage: a worker's report reaches the bundle's job
// with its message, a new message under the same status too (the bundle's
// modifyIndex moves, so a watcher sees it); a report without one and an
// in-place relaunch clear it.
func TestJobReportMirrorsMessage(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1000, 1))
	spec.Jobs[0].Launch = Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": "1"}}}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	id := h.fsm.State().NodeAssignments("n1")[0].ID
	job := func() JobPlacement { return h.fsm.State().Bundle("b1").Replicas[0].Jobs[0] }
	fail := func(msg string) {
		t.Helper()
		before := h.fsm.State().Bundle("b1").ModifyIndex
		h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobFailed, Message: msg})
		if j := job(); j.Status != JobFailed || j.Message != msg {
			t.Fatalf("job after a failed report %q: %+v", msg, j)
		}
		if h.fsm.State().Bundle("b1").ModifyIndex == before {
			t.Fatalf("report %q left the bundle's modifyIndex", msg)
		}
	}
	fail(`image "x:v9" is not on this node`)
	// The same status with another message changes nothing, as on a
	// server from before messages were mirrored (rolling upgrades).
	before := h.fsm.State().Bundle("b1").ModifyIndex
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobFailed, Message: "exec: no such file"})
	if j := job(); j.Message != `image "x:v9" is not on this node` || h.fsm.State().Bundle("b1").ModifyIndex != before {
		t.Fatalf("a report of the same status rewrote the job: %+v", j)
	}
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobRunning})
	if j := job(); j.Status != JobRunning || j.Message != "" {
		t.Fatalf("a running report without a message must clear it: %+v", j)
	}
	fail("exec: no such file")
	spec.Jobs[0].Launch = Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": "2"}}}
	h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: spec})
	if j := job(); j.Status != JobAssigned || j.Message != "" || j.NodeID != "n1" {
		t.Fatalf("an in-place relaunch must start the job over: %+v", j)
	}
}

func TestDeletionSaga(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("enc", 1000, 1))})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	asg := h.fsm.State().NodeAssignments("n1")
	if len(asg) != 1 || asg[0].Desired != DesiredRun {
		t.Fatalf("assignments after placement: %+v", asg)
	}
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: asg[0].ID, Status: JobRunning})
	if got := h.fsm.State().Bundle("b1").Replicas[0].Jobs[0].Status; got != JobRunning {
		t.Fatalf("job status %s, want running", got)
	}

	h.ok(DeleteBundleType, &DeleteBundleRequest{ID: "b1", Now: 10})
	st := h.fsm.State()
	if st.Bundle("b1").State != StateDeleting || st.NodeAssignments("n1")[0].Desired != DesiredStop {
		t.Fatal("delete must mark the bundle deleting and its assignments desired stop")
	}
	if len(st.Reservations()) != 1 {
		t.Fatal("reservations must be held until the jobs are confirmed stopped")
	}
	move := h.placeAll("b1", 0, "n1")
	move.Updates[0].Release = []SlotJob{{Slot: 0, Job: "enc"}}
	if pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{move}}).Value.(*PlanResult); len(pr.Rejected) != 1 {
		t.Fatalf("a deleting bundle must not be re-placed: %+v", pr)
	}
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: asg[0].ID, Status: JobStopped})
	if n := len(h.fsm.State().NodeAssignments("n1")); n != 0 {
		t.Fatalf("a stopped, desired-stopped assignment must be removed; %d left", n)
	}
	h.ok(PurgeBundleType, &PurgeBundleRequest{ID: "b1", Now: 11})
	st = h.fsm.State()
	if st.Bundle("b1") != nil || len(st.Reservations()) != 0 || st.Node("n1").Usage.Capacity != 0 {
		t.Fatal("purge must remove the bundle and release everything")
	}
	checkInvariants(t, h.fsm)
}

func TestPromotionBumpsEpochAndRoles(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.readyNode(testNode("n2", "p", "az2", "c2", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1000, 1))
	spec.Resilience = &Resilience{SameNode: Forbid}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	p0, p1 := h.placeAll("b1", 0, "n1"), h.placeAll("b1", 1, "n2")
	p0.Updates[0].Place = append(p0.Updates[0].Place, p1.Updates[0].Place...)
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{p0}})
	b := h.fsm.State().Bundle("b1")
	if b.State != StatePlaced || b.Epoch != 1 {
		t.Fatalf("state %s epoch %d", b.State, b.Epoch)
	}

	h.ok(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeDown})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{{
		BundleID: "b1", Promote: true, Release: []SlotJob{{Slot: 0, Job: "enc"}}, Reason: "node n1 down",
	}}}}})
	b = h.fsm.State().Bundle("b1")
	if b.Epoch != 2 || b.Replicas[0].Slot != 1 || b.Replicas[0].Role != RolePrimary || b.Replicas[1].Role != RoleBackup {
		t.Fatalf("after promotion: epoch %d replicas %+v", b.Epoch, b.Replicas)
	}
	if b.State != StateDegraded {
		t.Fatalf("backup lost: state %s, want degraded", b.State)
	}
	for _, a := range h.fsm.State().NodeAssignments("n2") {
		if a.Role != RolePrimary || a.Epoch != 2 {
			t.Fatalf("n2 assignment not promoted: %+v", a)
		}
	}
	if a := h.fsm.State().NodeAssignments("n1"); len(a) != 1 || a[0].Desired != DesiredStop {
		t.Fatalf("the down node must see its stale assignment desired stopped: %+v", a)
	}
	checkInvariants(t, h.fsm)
}

func TestNodeUpdateBelowReservedRefused(t *testing.T) {
	h := newHarness(t)
	n := testNode("n1", "p", "az1", "c1", 4000, 4)
	h.readyNode(n)
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("enc", 3000, 3))})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	before := stateHash(t, h.fsm)
	shrunk := n
	shrunk.TotalCores = 2
	if res := h.apply(RegisterNodeType, &RegisterNodeRequest{Node: shrunk}); !errors.Is(res.Err, ErrConflict) {
		t.Fatalf("shrinking below reserved cores: %v", res.Err)
	}
	moved := n
	moved.Pool = "other"
	if res := h.apply(RegisterNodeType, &RegisterNodeRequest{Node: moved}); !errors.Is(res.Err, ErrInUse) {
		t.Fatalf("moving a loaded node: %v", res.Err)
	}
	if res := h.apply(DeregisterNodeType, &DeregisterNodeRequest{NodeID: "n1"}); !errors.Is(res.Err, ErrInUse) {
		t.Fatalf("deregistering a loaded node: %v", res.Err)
	}
	if stateHash(t, h.fsm) != before {
		t.Fatal("refused commands changed state")
	}
	h.ok(DeregisterNodeType, &DeregisterNodeRequest{NodeID: "n1", Force: true})
	if b := h.fsm.State().Bundle("b1"); b.State != StatePending {
		t.Fatalf("forced deregistration must unplace: %s", b.State)
	}
	checkInvariants(t, h.fsm)
}

func TestTimersUseCommandClock(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	spec := testBundle("b1", "p", testJob("enc", 1000, 0))
	spec.StartAt, spec.StopAt = 1000, 2000
	if b := h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec, Now: 500}).Value.(*Bundle); b.State != StateScheduled {
		t.Fatalf("future startAt: state %s", b.State)
	}
	h.ok(TimerType, &TimerRequest{Now: 900, Start: []string{"b1"}})
	if s := h.fsm.State().Bundle("b1").State; s != StateScheduled {
		t.Fatalf("an early timer must not start the bundle: %s", s)
	}
	h.ok(TimerType, &TimerRequest{Now: 1000, Start: []string{"b1"}, Stop: []string{"b1"}})
	if s := h.fsm.State().Bundle("b1").State; s != StatePending {
		t.Fatalf("due start: %s", s)
	}
	h.ok(TimerType, &TimerRequest{Now: 2000, Stop: []string{"b1"}})
	if s := h.fsm.State().Bundle("b1").State; s != StateDeleting {
		t.Fatalf("due stop: %s", s)
	}
}

func TestNodeServiceProvidesCapability(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	svc := NodeService{ID: "ptp", Pools: []string{"p"}, Provides: []ledger.Capability{{Name: "ptp-clock", Count: 4}}}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{{ServiceID: "ptp", Node: "n1"}}}}})
	id := serviceAssignmentID("ptp", "n1")
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobRunning})
	inv := h.fsm.State().Node("n1").Inventory()
	if i := capabilityIndex(inv.Capabilities, "ptp-clock"); i < 0 || inv.Capabilities[i].Count != 4 {
		t.Fatalf("running service must provide its capability: %+v", inv.Capabilities)
	}
	spec := testBundle("b1", "p", Job{Name: "j", Requirements: ledger.Request{
		Capabilities: []ledger.CapabilityRequest{{Name: "ptp-clock", Count: 1}},
	}})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobFailed})
	st := h.fsm.State()
	if i := capabilityIndex(st.Node("n1").Inventory().Capabilities, "ptp-clock"); i >= 0 {
		t.Fatal("failed service still provides its capability")
	}
	if st.Bundle("b1").State != StatePending {
		t.Fatalf("consumer of a withdrawn capability must lose its reservation: %s", st.Bundle("b1").State)
	}
	checkInvariants(t, h.fsm)
}

func TestUnknownCommandTypes(t *testing.T) {
	h := newHarness(t)
	ignored := h.fsm.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{byte(IgnoreUnknownFlag | 0x7f), 0xc0}})
	if res, ok := ignored.(*Result); !ok || res.Err != nil {
		t.Fatalf("flagged unknown command must be ignored: %#v", ignored)
	}
	defer func() {
		r := recover()
		if _, ok := r.(*UndecodableError); !ok {
			t.Fatalf("unflagged unknown command must panic with UndecodableError, got %#v", r)
		}
	}()
	h.fsm.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{0x7f}})
}

func TestBadFieldValuesChangeNothing(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	before := stateHash(t, h.fsm)
	bad := []struct {
		typ  MessageType
		body any
	}{
		{RegisterNodeType, &RegisterNodeRequest{Node: Node{ID: "Bad Id", Pool: "p", TotalCapacity: 1}}},
		{RegisterNodeType, &RegisterNodeRequest{Node: Node{ID: "n2", Pool: "p", TotalCapacity: -5}}},
		{NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: "exploded"}},
		{NodeStatusType, &NodeStatusRequest{NodeID: "ghost", Status: NodeReady}},
		{UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "q", Kind: "weird"}}},
		{DeletePoolType, &DeletePoolRequest{Name: "p"}},
		{CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "nope", testJob("j", 1, 0))}},
		{CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p")}},
		{DeleteBundleType, &DeleteBundleRequest{ID: "ghost"}},
		{PurgeBundleType, &PurgeBundleRequest{ID: "ghost"}},
		{AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: "x", Status: "bogus"}},
		{AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: "x", Status: JobRunning}},
		{UpsertServiceType, &UpsertServiceRequest{Service: NodeService{ID: "s"}}},
		{DeleteServiceType, &DeleteServiceRequest{ID: "ghost"}},
	}
	for _, c := range bad {
		if res := h.apply(c.typ, c.body); res.Err == nil {
			t.Errorf("%s %+v: want an error", c.typ, c.body)
		}
	}
	if stateHash(t, h.fsm) != before {
		t.Fatal("failed commands changed state")
	}
}

func TestNodeDrainedEventWhenLastJobLeaves(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.readyNode(testNode("n2", "p", "az2", "c1", 4000, 4))
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("enc", 1000, 1))})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	h.ok(NodeDrainType, &NodeFlagRequest{NodeID: "n1", On: true})
	move := h.placeAll("b1", 0, "n2")
	move.Updates[0].Release = []SlotJob{{Slot: 0, Job: "enc"}}
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{move}})
	drained := 0
	for _, e := range h.fsm.State().Events(0, 0) {
		if e.Type == "nodeDrained" && e.NodeID == "n1" {
			drained++
		}
	}
	if drained != 1 {
		t.Fatalf("want one nodeDrained event for n1, got %d", drained)
	}
}

// TestDigestLeavesOutJobMessages: a server from before messages were
// mirrored applies the same report and keeps the message on the
// assignment only; at the same index both must report the same digest,
// while a different status still changes it.
func TestDigestLeavesOutJobMessages(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("enc", 1000, 1))})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	id := h.fsm.State().NodeAssignments("n1")[0].ID
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobFailed, Message: `image "x" is not on this node`})
	digest := func() string {
		d, err := h.fsm.State().Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	rewrite := func(edit func(j *JobPlacement)) {
		cp := cloneBundle(h.fsm.State().Bundle("b1"))
		edit(&cp.Replicas[0].Jobs[0])
		txn := h.fsm.db.Txn(true)
		if err := txn.Insert(tableBundles, cp); err != nil {
			t.Fatal(err)
		}
		txn.Commit()
	}
	if h.fsm.State().Bundle("b1").Replicas[0].Jobs[0].Message == "" {
		t.Fatal("the failed job did not keep its message")
	}
	newer := digest()
	rewrite(func(j *JobPlacement) { j.Message = "" }) // the older server's row
	if older := digest(); older != newer {
		t.Fatal("a job's message changed the digest")
	}
	// Where a finished batch bundle's jobs ran is display only as well.
	cp := cloneBundle(h.fsm.State().Bundle("b1"))
	cp.Ran = []string{id}
	txn := h.fsm.db.Txn(true)
	if err := txn.Insert(tableBundles, cp); err != nil {
		t.Fatal(err)
	}
	txn.Commit()
	if digest() != newer {
		t.Fatal("where the jobs ran changed the digest")
	}
	rewrite(func(j *JobPlacement) { j.Status = JobRunning })
	if digest() == newer {
		t.Fatal("the job's status did not change the digest")
	}
}
