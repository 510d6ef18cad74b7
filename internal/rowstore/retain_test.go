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
			if kept := reachable(old); kept > 0 {
				t.Fatalf("%d of %d replaced rows are still reachable", kept, n)
			}
			runtime.KeepAlive(db)
		})
	}
}

// TestRefreshWalkFreesReplacedRows writes as the FSM does at a burst of
// creates: every commit inserts rows at the end of the key space and
// replaces the rows the commit before inserted (their placement). A split
// leaves the moved rows' first versions in the array of a left node that
// no write touches again; each commit refreshes only a stretch of the
// table, and once a quarter of the table more has been inserted (one walk
// round it) none of the replaced versions is reachable.
func TestRefreshWalkFreesReplacedRows(t *testing.T) {
	db := newTestDB(t, 4)
	const n, perCommit = 2000, 10
	id := func(i int) string { return fmt.Sprintf("r%07d", i) }
	first := make([]weak.Pointer[item], n)
	// A quarter of the table more, plus the table's growth meanwhile: the
	// walk has passed every node once.
	total := n + n/4 + n/8
	for c := 0; c <= total; c += perCommit {
		txn := db.Txn(true)
		for i := c; i < min(c+perCommit, total); i++ {
			it := &item{ID: id(i), Group: "created"}
			if i < n {
				first[i] = weak.Make(it)
			}
			must(t, txn.Insert("items", it))
		}
		for i := max(c-perCommit, 0); i < c; i++ {
			must(t, txn.Insert("items", &item{ID: id(i), Group: "placed"}))
		}
		txn.Commit()
	}
	if kept := reachable(first); kept > 0 {
		t.Fatalf("%d of %d replaced rows are still reachable after the walk went round", kept, n)
	}
	runtime.KeepAlive(db)
}

// reachable collects garbage and counts the rows still reachable.
func reachable(rows []weak.Pointer[item]) int {
	runtime.GC()
	kept := 0
	for _, p := range rows {
		if p.Value() != nil {
			kept++
		}
	}
	return kept
}
