package fsm

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/ledger"
)

// panicType is a test-only command that writes and then panics, as a
// command with an undecodable body does after a decoder bug.
const panicType MessageType = 0x7d

func withPanicCommand(f *FSM) *FSM {
	f.handlers[panicType] = func(t *tx, _ []byte) (any, error) {
		t.insert(tableEvents, &eventRow{ID: eventID(t.index, 98), Event: Event{Index: t.index, Type: "panicked"}})
		panic("test: command panics after writing")
	}
	return f
}

func applyMayPanic(f *FSM, l *raft.Log) (res any, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
		}
	}()
	return f.Apply(l), false
}

// TestOpenTransactionKeepsEarlierCommands: entries applied one Apply call
// at a time with no read between them share the open transaction; a later
// command that fails after writing, or panics, undoes only itself, and the
// state equals that of a replica that committed every command alone.
func TestOpenTransactionKeepsEarlierCommands(t *testing.T) {
	h := newHarness(t) // numbers and encodes the log
	n := testNode("n1", "p", "az1", "c1", 8000, 8)
	var logs []*raft.Log
	logs = append(logs, h.log(RegisterNodeType, &RegisterNodeRequest{Node: n}), h.log(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeReady}))
	for i := range 5 {
		logs = append(logs, h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle(fmt.Sprintf("b%d", i), "p", testJob("j", 100, 0))}))
	}
	h.index++
	logs = append(logs, &raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: []byte{byte(dirtyType)}})
	logs = append(logs, h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b5", "p", testJob("j", 100, 0))}))
	h.index++
	logs = append(logs, &raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: []byte{byte(panicType)}})
	logs = append(logs, h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b6", "p", testJob("j", 100, 0))}))

	open := withPanicCommand(withDirtyCommand(New(Config{})))
	alone := withPanicCommand(withDirtyCommand(New(Config{})))
	for _, l := range logs {
		_, p1 := applyMayPanic(open, l)
		_, p2 := applyMayPanic(alone, l)
		alone.State() // a read after every command commits each alone
		if p1 != p2 || p1 != (l.Data[0] == byte(panicType)) {
			t.Fatalf("index %d: panicked %v (alone %v)", l.Index, p1, p2)
		}
	}
	st := open.State()
	for i := range 7 {
		if st.Bundle(fmt.Sprintf("b%d", i)) == nil {
			t.Fatalf("bundle b%d lost", i)
		}
	}
	for _, e := range st.Events(0, 0) {
		if e.Type == "dirty" || e.Type == "panicked" {
			t.Fatalf("a failed command's write survived: %+v", e)
		}
	}
	if stateHash(t, open) != stateHash(t, alone) {
		t.Fatal("state differs from one transaction per command")
	}
}

// TestReadersSeeEveryAcknowledgedCommand: a reader told of a command's
// result finds its write, while other readers read all along (run with
// -race).
func TestReadersSeeEveryAcknowledgedCommand(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 1_000_000, 64))
	const n = 300
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle(fmt.Sprintf("b%03d", i), "p", testJob("j", 10, 0))})
	}
	acked := make(chan string)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 { // readers that never wait for anything
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = h.fsm.State().Bundles("", "")
				}
			}
		}()
	}
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := range acked {
			if h.fsm.State().Bundle(id) == nil {
				select {
				case errs <- fmt.Errorf("bundle %s acknowledged but not readable", id):
				default:
				}
			}
		}
	}()
	for i, l := range logs {
		if res := h.fsm.Apply(l).(*Result); res.Err != nil {
			t.Fatalf("create %d: %v", i, res.Err)
		}
		acked <- fmt.Sprintf("b%03d", i)
	}
	close(acked)
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if got := len(h.fsm.State().Bundles("", "")); got != n {
		t.Fatalf("%d bundles, want %d", got, n)
	}
}

// TestSnapshotRestoreAndPreviewWithAnOpenTransaction: a snapshot holds the
// commands not yet committed; a restore replaces them; Preview and later
// commands still get the write transaction.
func TestSnapshotRestoreAndPreviewWithAnOpenTransaction(t *testing.T) {
	src := newHarness(t)
	src.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	src.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("kept", "p", testJob("j", 100, 0))})
	snap, err := src.fsm.Snapshot() // commits the open transaction first
	if err != nil {
		t.Fatal(err)
	}
	src.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("later", "p", testJob("j", 100, 0))})
	if snap.(*fsmSnapshot).hdr.Index != 3 {
		t.Fatalf("snapshot index %d, want 3", snap.(*fsmSnapshot).hdr.Index)
	}

	dst := newHarness(t)
	dst.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	dst.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("dropped", "p", testJob("j", 100, 0))}) // left open
	restoreInto(t, src.fsm, dst.fsm)
	if dst.fsm.State().Bundle("dropped") != nil {
		t.Fatal("a command of the open transaction survived the restore")
	}
	if stateHash(t, dst.fsm) != stateHash(t, src.fsm) {
		t.Fatal("restored state differs from the snapshot's")
	}
	dst.index = src.index
	dst.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("after", "p", testJob("j", 100, 0))}) // open again
	data := mustEncode(t, CreateBundleType, &CreateBundleRequest{Spec: testBundle("preview", "p", testJob("j", 100, 0))})
	if res := dst.fsm.Preview(dst.index+1, data); res.Err != nil {
		t.Fatalf("preview: %v", res.Err)
	}
	st := dst.fsm.State()
	if st.Bundle("after") == nil || st.Bundle("preview") != nil {
		t.Fatal("preview wrote, or the command before it was lost")
	}
}

// TestOpenViewReadsWhatTheTransactionWrote: commands that read rows which
// earlier commands of the same open transaction wrote (a node made ready,
// a bundle created, then placed, then deleted) see those writes, and the
// state equals that of a replica that committed every command alone.
func TestOpenViewReadsWhatTheTransactionWrote(t *testing.T) {
	h := newHarness(t) // numbers and encodes the log
	n := testNode("n1", "p", "az1", "c1", 8000, 8)
	logs := []*raft.Log{
		h.log(RegisterNodeType, &RegisterNodeRequest{Node: n}),
		h.log(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeReady}),
		h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("j", 100, 0))}),
		h.log(ApplyPlanType, &Plan{Parts: []PlanPart{place("b1", 0, "n1", ledger.Grant{Capacity: 100})}}),
		h.log(ApplyPlanType, &Plan{Parts: []PlanPart{place("b1", 0, "n1", ledger.Grant{Capacity: 100})}}), // already placed: rejected
		h.log(DeleteBundleType, &DeleteBundleRequest{ID: "b1"}),
		h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("j", 200, 0))}), // exists, different spec
	}
	open, alone := New(Config{}), New(Config{})
	var got, want []*Result
	for _, l := range logs {
		got = append(got, open.Apply(l).(*Result))
		want = append(want, alone.Apply(l).(*Result))
		alone.State()
	}
	for i := range logs {
		if (got[i].Err == nil) != (want[i].Err == nil) {
			t.Fatalf("command %d: open %v, alone %v", i, got[i].Err, want[i].Err)
		}
	}
	if pr := got[3].Value.(*PlanResult); len(pr.Committed) != 1 {
		t.Fatalf("the plan did not see the bundle and node written before it: %+v", pr)
	}
	if pr := got[4].Value.(*PlanResult); len(pr.Rejected) != 1 {
		t.Fatalf("the second plan did not see the first one's placement: %+v", pr)
	}
	if got[6].Err == nil {
		t.Fatal("the second create did not see the bundle")
	}
	if stateHash(t, open) != stateHash(t, alone) {
		t.Fatal("state differs from one transaction per command")
	}
	checkInvariants(t, open)
}

// TestReadersSkipTheWriteLockBetweenBatches: once a reader has committed
// the open transaction, the end of the next batch commits too, and a
// reader then reads without the write lock (held here by the test, as a
// command in flight would) and sees every finished batch; without a
// reader in between, a batch ends open and the next read commits it.
func TestReadersSkipTheWriteLockBetweenBatches(t *testing.T) {
	h := newHarness(t)
	f := h.fsm
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	create := func(id string) *raft.Log {
		return h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle(id, "p", testJob("j", 100, 0))})
	}
	if res := f.ApplyBatch([]*raft.Log{create("a")})[0].(*Result); res.Err != nil {
		t.Fatalf("create: %v", res.Err)
	}
	if f.State().Bundle("a") == nil { // commits: the batch ended open
		t.Fatal("a reader after the batch misses its command")
	}
	f.ApplyBatch([]*raft.Log{create("b"), create("c")}) // ends committed: a reader came
	if f.hasOpen.Load() {
		t.Fatal("a batch after a reader's commit ended open")
	}
	f.wmu.Lock()
	got := make(chan *State, 1)
	go func() { got <- f.State() }()
	st := <-got // blocks forever (the test times out) if State takes wmu
	f.wmu.Unlock()
	if st.Bundle("b") == nil || st.Bundle("c") == nil {
		t.Fatal("a lock-free reader misses a finished batch")
	}
	f.ApplyBatch([]*raft.Log{create("d")}) // no reader came: ends open
	if f.visible.Load() >= f.batchEnd.Load() || !f.hasOpen.Load() {
		t.Fatalf("batch committed with no reader waiting (visible %d, end %d)", f.visible.Load(), f.batchEnd.Load())
	}
	if f.State().Bundle("d") == nil {
		t.Fatal("a reader after an open batch misses its command")
	}
}
