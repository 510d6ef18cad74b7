package agent_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/testcluster"
)

// TestRestoreIntoFreshClusterKeepsIndexesMonotonic: a snapshot of a
// cluster at a high index restored into a fresh one (a clone, a disaster
// recovery) must leave the new cluster's indexes past the snapshot's, so
// that a write after the restore is visible at a higher index than the
// restored state: a blocking query or an event stream resuming at the
// restored index would otherwise sleep through the new writes.
func TestRestoreIntoFreshClusterKeepsIndexesMonotonic(t *testing.T) {
	src := testcluster.New(t, 1)
	ctx := ctxTimeout(t, 30*time.Second)
	for i := range 30 {
		if _, err := src.Client(src.Leader()).PutPool(ctx, testPool(fmt.Sprintf("p%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	saved, err := src.Client(src.Leader()).SnapshotSave(ctx, &buf)
	if err != nil {
		t.Fatalf("save: %v", err)
	}

	dst := testcluster.New(t, 1)
	dc := dst.Client(dst.Leader())
	if err := dc.SnapshotRestore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if _, err := dc.PutPool(ctx, testPool("after")); err != nil {
		t.Fatalf("write after the restore: %v", err)
	}
	_, meta, err := dc.Pool(ctx, "after", nil)
	if err != nil {
		t.Fatalf("read of the write after the restore: %v", err)
	}
	if meta.Index <= saved.Index {
		t.Fatalf("the write after the restore is at index %d, not past the restored snapshot's %d", meta.Index, saved.Index)
	}
}
