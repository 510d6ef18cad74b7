package fsm

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
)

// watchRecord is one wait of a reader: the channel it took, then the
// bundles index of the view it took after it.
type watchRecord struct {
	ch    <-chan struct{}
	index uint64
}

// TestWatchNeverMissesAChange: readers take WatchCh, then a view, as
// blocking queries do, while commands apply and a restore moves the state
// back to an older snapshot. After a change, any reader whose view is not
// the current state must hold a closed channel: otherwise a blocking query
// would sleep through the change until its wait ran out.
func TestWatchNeverMissesAChange(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	const creates, restoreAt = 300, 200
	w := &watchLog{}
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				ch := h.fsm.WatchCh()
				w.add(watchRecord{ch, h.fsm.State().Index(tableBundles)})
				select {
				case <-ch:
				case <-done:
					return
				}
			}
		})
	}
	defer func() { close(done); readers.Wait() }()

	var older bytes.Buffer
	for i := range creates {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(fmt.Sprintf("b%03d", i), "p", testJob("j", 10, 0))})
		switch i {
		case restoreAt / 2:
			snap, err := h.fsm.Snapshot()
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			if err := PersistTo(snap, &older); err != nil {
				t.Fatalf("persist: %v", err)
			}
		case restoreAt:
			if err := h.fsm.Restore(io.NopCloser(&older)); err != nil {
				t.Fatalf("restore: %v", err)
			}
		}
		if i%3 != 2 && i != restoreAt {
			continue // some changes in a row between checks
		}
		if err := w.check(h.fsm.State().Index(tableBundles)); err != nil {
			t.Fatalf("after create %d: %v", i, err)
		}
	}
	if w.stale == 0 {
		t.Fatalf("no reader held a view older than a change (%d waits): the test checked nothing", w.total)
	}
}

// watchLog holds the waits whose channel was still open at the last check.
type watchLog struct {
	mu           sync.Mutex
	open         []watchRecord
	total, stale int
}

func (w *watchLog) add(r watchRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open = append(w.open, r)
	w.total++
}

// check: every wait whose view is not the state at index must be woken;
// the woken ones are done with.
func (w *watchLog) check(index uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.open[:0]
	for _, r := range w.open {
		select {
		case <-r.ch:
			if r.index != index {
				w.stale++
			}
			continue
		default:
		}
		if r.index != index {
			return fmt.Errorf("a reader that saw bundles index %d (now %d) holds a channel that was not closed", r.index, index)
		}
		kept = append(kept, r)
	}
	w.open = kept
	return nil
}
