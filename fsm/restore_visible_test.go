package fsm

import (
	"fmt"
	"io"
	"testing"
)

// TestRestoreFromHigherIndexKeepsWritesVisible: a snapshot saved on a
// cluster at a higher index than the Raft log it is restored into (an
// operator's `snapshot restore` into a fresh cluster, then a restart that
// loads Raft's copy of it) is followed by entries at lower indexes. Each
// must be visible to the next read, as after any other restore.
func TestRestoreFromHigherIndexKeepsWritesVisible(t *testing.T) {
	src := newHarness(t)
	src.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	for i := range 50 {
		src.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(fmt.Sprintf("old%02d", i), "p", testJob("j", 1, 0))})
	}
	snap := snapshotBytes(t, src.fsm)

	dst := newHarness(t)
	dst.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	if err := dst.fsm.Restore(io.NopCloser(snap)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	for i := range 3 {
		id := fmt.Sprintf("new%d", i)
		dst.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(id, "p", testJob("j", 1, 0))})
		if dst.fsm.State().Bundle(id) == nil {
			t.Fatalf("bundle %s, created at index %d after a restore of index %d, is not visible", id, dst.index, src.index)
		}
	}
}
