package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/snapshot"
)

// headerOf persists snap and reads its header back as inspect does.
func headerOf(t *testing.T, snap raft.FSMSnapshot) (snapshot.Header, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	if err := PersistTo(snap, &buf); err != nil {
		t.Fatalf("persist: %v", err)
	}
	sr, err := snapshot.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("read header: %v", err)
	}
	return sr.Header(), &buf
}

// TestSnapshotHeaderNamesItsEntry: a snapshot's header carries the index
// and the term of the last entry it holds (DESIGN §5.4) and when it was
// taken; a replica restored from it carries them on into its own next
// snapshot.
func TestSnapshotHeaderNamesItsEntry(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	l := h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle("a", "p", testJob("j", 100, 0))})
	l.Term = 4
	if res := h.fsm.Apply(l).(*Result); res.Err != nil {
		t.Fatal(res.Err)
	}
	h.fsm.Apply(&raft.Log{Index: 3, Term: 5, Type: raft.LogNoop}) // a new leader's first entry
	before := time.Now()
	snap, err := h.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	hdr, buf := headerOf(t, snap)
	created := time.Unix(0, hdr.CreatedUnixNano)
	if hdr.Index != 3 || hdr.Term != 5 || created.Before(before.Add(-time.Second)) || created.After(time.Now()) {
		t.Fatalf("header = %+v (created %s), want index 3, term 5, created now", hdr, created)
	}
	dst := newHarness(t)
	if err := dst.fsm.Restore(io.NopCloser(buf)); err != nil {
		t.Fatal(err)
	}
	again, err := dst.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := headerOf(t, again); got.Index != 3 || got.Term != 5 {
		t.Fatalf("restored replica's snapshot header = %+v, want index 3, term 5", got)
	}
}

// TestSnapshotBesideApplyHoldsWhatItsIndexSays: a snapshot the API takes
// while entries apply holds exactly the creates up to its header's index:
// the bundle created at that index and none created after it.
func TestSnapshotBesideApplyHoldsWhatItsIndexSays(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}}) // index 1; bundle bN is created at index N
	const creates = 2000
	logs := make([]*raft.Log, 0, creates)
	for i := 2; i < creates+2; i++ {
		logs = append(logs, h.log(CreateBundleType, &CreateBundleRequest{Spec: testBundle(fmt.Sprintf("b%d", i), "p", testJob("j", 1, 0))}))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, l := range logs {
			h.fsm.Apply(l)
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		snap, err := h.fsm.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		s := snap.(*fsmSnapshot)
		st := newState(s.db)
		idx := s.hdr.Index
		if idx >= 2 && st.Bundle(fmt.Sprintf("b%d", idx)) == nil {
			t.Fatalf("snapshot at index %d misses the bundle created at %d", idx, idx)
		}
		if st.Bundle(fmt.Sprintf("b%d", idx+1)) != nil {
			t.Fatalf("snapshot at index %d holds the bundle created at %d", idx, idx+1)
		}
	}
}
