package rowstore

import (
	"fmt"
	"testing"

	"github.com/tidwall/btree"
)

// TestRefreshWalkPosition: each refresh re-sets refreshPerInsert rows per
// insert owed (at least refreshChunk at once) from where the last one
// stopped, wraps at the end, and starts at the first row after a stretch
// that ended exactly at the last one.
func TestRefreshWalkPosition(t *testing.T) {
	const n = 5000
	id := func(i int) string { return fmt.Sprintf("r%05d", i) }
	tb := &table{primary: btree.NewBTreeGOptions(rowLess, btree.Options{Degree: 4, NoLocks: true})}
	for i := range n {
		tb.primary.Set(row{id: id(i)})
	}
	for _, step := range []struct {
		inserted  int
		wantSweep string
		wantOwed  int
	}{
		{1000, id(4000), 0},   // 4,000 rows from the first
		{1000, id(3000), 0},   // 1,000 to the end, 3,000 from the first
		{250, id(3000), 1000}, // under refreshChunk: owed, nothing re-set
		{250, id(3000), 2000},
		{13, id(52), 0}, // 2,052: 2,000 to the end and 52 from the first
		{1237, "", 0},   // 4,948 rows, exactly to the end: next at the first
		{512, id(2048), 0},
	} {
		tb.refresh(step.inserted)
		if tb.sweep != step.wantSweep || tb.owed != step.wantOwed {
			t.Fatalf("after %d inserted: sweep %q owed %d, want %q and %d", step.inserted, tb.sweep, tb.owed, step.wantSweep, step.wantOwed)
		}
		if tb.primary.Len() != n {
			t.Fatalf("the walk changed the row count: %d", tb.primary.Len())
		}
	}
}
