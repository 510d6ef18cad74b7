package fsm

import (
	"io"
	"testing"

	"github.com/amserver/amserver/internal/memlimit"
)

// relaxWatcher reads a snapshot and notes whether the heap limit was
// lifted at every read.
type relaxWatcher struct {
	r              io.Reader
	reads, relaxed int
}

func (w *relaxWatcher) Read(p []byte) (int, error) {
	w.reads++
	if memlimit.Relaxed() {
		w.relaxed++
	}
	return w.r.Read(p)
}

// TestRestoreLiftsTheHeapLimit: the limit is lifted while a snapshot is
// read (the old state and the new are both live then) and back once the
// restore returns. Not parallel: Relaxed is process-wide.
func TestRestoreLiftsTheHeapLimit(t *testing.T) {
	src := newHarness(t)
	src.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	src.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b", "p", testJob("j", 100, 0))})
	buf := snapshotBytes(t, src.fsm)
	if memlimit.Relaxed() {
		t.Fatal("the limit is lifted before any restore")
	}
	w := &relaxWatcher{r: buf}
	if err := New(Config{}).Restore(io.NopCloser(w)); err != nil {
		t.Fatal(err)
	}
	if w.reads == 0 || w.relaxed != w.reads {
		t.Fatalf("the limit was lifted for %d of %d reads of the snapshot", w.relaxed, w.reads)
	}
	if memlimit.Relaxed() {
		t.Fatal("the limit is still lifted after the restore returned")
	}
}
