package fsm

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// dirtyType is a test-only command that writes an event and then fails, the
// case a shared batch transaction must undo.
const dirtyType MessageType = 0x7e

var errDirty = errors.New("failed after writing")

func withDirtyCommand(f *FSM) *FSM {
	f.handlers[dirtyType] = func(t *tx, _ []byte) (any, error) {
		t.insert(tableEvents, &eventRow{ID: eventID(t.index, 99), Event: Event{Index: t.index, Type: "dirty"}})
		return nil, errDirty
	}
	return f
}

// TestBatchUndoesCommandThatFailsAfterWriting: in one batch, a command that
// fails after writing leaves no trace, and the commands around it apply as
// they would one transaction each.
func TestBatchUndoesCommandThatFailsAfterWriting(t *testing.T) {
	h := newHarness(t) // used only to number and encode the log
	n := testNode("n1", "p", "az1", "c1", 8000, 8)
	setup := []*raft.Log{
		h.log(RegisterNodeType, &RegisterNodeRequest{Node: n}),
		h.log(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeReady}),
	}
	logs := []*raft.Log{
		h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("j", 100, 0))}),
		h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b2", "p", testJob("j", 100, 0))}),
		{Index: h.index + 1, Term: 1, Type: raft.LogCommand, Data: []byte{byte(dirtyType)}},
		{Index: h.index + 2, Term: 1, Type: raft.LogCommand, Data: mustEncode(t, CreateBundleType, &CreateBundleRequest{Spec: testBundle("b3", "p", testJob("j", 100, 0))})},
	}
	batched, alone := withDirtyCommand(New(Config{})), withDirtyCommand(New(Config{}))
	for _, l := range setup {
		batched.Apply(l)
		alone.Apply(l)
	}
	want := make([]any, len(logs))
	for i, l := range logs {
		want[i] = alone.Apply(l)
	}
	got := batched.ApplyBatch(logs)
	if r := got[2].(*Result); !errors.Is(r.Err, errDirty) {
		t.Fatalf("dirty command: %+v", r)
	}
	for i := range logs {
		g, w := got[i].(*Result), want[i].(*Result)
		if (g.Err == nil) != (w.Err == nil) || g.Index != w.Index || g.Created != w.Created {
			t.Fatalf("result %d: batched %+v, alone %+v", i, g, w)
		}
	}
	st := batched.State()
	for _, id := range []string{"b1", "b2", "b3"} {
		if st.Bundle(id) == nil {
			t.Fatalf("bundle %s missing after the batch", id)
		}
	}
	for _, e := range st.Events(0, 0) {
		if e.Type == "dirty" {
			t.Fatal("the failed command's write survived")
		}
	}
	if stateHash(t, batched) != stateHash(t, alone) {
		t.Fatal("batched state differs from one transaction per command")
	}
}
