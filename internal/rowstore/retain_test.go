package rowstore

import (
	"fmt"
	"runtime"
	"testing"
	"weak"
)

// TestReplacedRowsAreNotRetained: a row replaced after it was inserted is
// garbage once no version holds it, whether it was replaced in the
// transaction that inserted it or in a later one. The B-tree's node split
// leaves the moved half's items in the array the left node keeps;
// without table.refresh nearly all such replaced rows stayed reachable.
func TestReplacedRowsAreNotRetained(t *testing.T) {
	for _, tc := range []struct {
		name         string
		commitBefore bool // commit between the inserts and the replaces
	}{
		{"replaced in the inserting transaction", false},
		{"replaced in a later transaction", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newTestDB(t, 4)
			txn := db.Txn(true)
			const n = 500
			old := make([]weak.Pointer[item], n)
			for i := range n {
				it := &item{ID: fmt.Sprintf("r%05d", i), Group: "g"}
				old[i] = weak.Make(it)
				if err := txn.Insert("items", it); err != nil {
					t.Fatal(err)
				}
			}
			if tc.commitBefore {
				txn.Commit()
				txn = db.Txn(true)
			}
			for i := range n {
				if err := txn.Insert("items", &item{ID: fmt.Sprintf("r%05d", i), Group: "h"}); err != nil {
					t.Fatal(err)
				}
			}
			txn.Commit()
			runtime.GC()
			kept := 0
			for _, p := range old {
				if p.Value() != nil {
					kept++
				}
			}
			if kept > 0 {
				t.Fatalf("%d of %d replaced rows are still reachable", kept, n)
			}
			runtime.KeepAlive(db)
		})
	}
}
