package rowstore

import (
	"github.com/tidwall/btree"
)

// row is a primary entry: a row under its id.
type row struct {
	id  string
	obj any
}

// entry is a secondary index entry: the row with this id has this value.
// Entries sort by value, then id, which is memdb's order for the same
// index ("value\x00id\x00"), so listings keep their order.
type entry struct {
	key, id string
}

func rowLess(a, b row) bool { return a.id < b.id }

func entryLess(a, b entry) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.id < b.id
}

// table is one table's trees in one version. A published table is never
// written again; a transaction writes a detached copy.
type table struct {
	primary   *btree.BTreeG[row]
	secondary []*btree.BTreeG[entry]
	// sweep is the id at which the next refresh goes on (at the first
	// row when empty or past the last); owed is how many rows it re-sets.
	sweep string
	owed  int
}

func newTable(c *compiled, ti int) *table {
	opts := btree.Options{Degree: c.Degree, NoLocks: true}
	t := &table{primary: btree.NewBTreeGOptions(rowLess, opts)}
	for range c.Tables[ti].Indexes {
		t.secondary = append(t.secondary, btree.NewBTreeGOptions(entryLess, opts))
	}
	return t
}

// detach returns a copy of a tree that can be written without changing it.
// btree's Copy gives both trees a new isolation id so that neither writes
// a node they share; that assignment writes to the source, which readers
// of a published tree may be reading. Copying the handle first leaves the
// source untouched: its nodes carry an id no writable handle has.
func detach[T any](tr *btree.BTreeG[T]) *btree.BTreeG[T] {
	handle := *tr
	return handle.Copy()
}

// detached is a writable copy of a published table.
func (t *table) detached() *table {
	out := &table{primary: detach(t.primary), secondary: make([]*btree.BTreeG[entry], len(t.secondary)), sweep: t.sweep, owed: t.owed}
	for i, s := range t.secondary {
		out.secondary[i] = detach(s)
	}
	return out
}

// refresh re-sets refreshPerInsert rows for every row inserted, walking
// the primary tree round and round from where the last commit stopped. A
// row set again under a new isolation id copies the nodes on its path
// into arrays of just their items.
//
// When the B-tree splits a full node, the new right node's items (and an
// inner node's children) stay in the array the left node keeps
// (tidwall/btree's nodeSplit reslices it): once the right node grows into
// an array of its own, the left one still holds the moved values in its
// spare capacity. A row replaced afterwards stayed reachable, with
// everything it held, for as long as that left node lived, which for a
// node no write touches again is as long as the store: at 100,000 bundles
// about half the bundles kept the version their create wrote (tens of
// MiB). Only inserts split nodes, and one walk over the table per quarter
// of it inserted bounds what splits leave behind. Copying the whole tree
// at once did the same work in one commit: hundreds of milliseconds inside
// one Raft apply at 100,000 rows, every write behind it waiting.
func (t *table) refresh(inserted int) {
	n := t.primary.Len()
	t.owed += refreshPerInsert * inserted
	if t.owed < min(refreshChunk, n) {
		return // a stretch at a time: each one copies the inner nodes again
	}
	budget := min(t.owed, n)
	t.owed = 0
	if budget == 0 {
		return
	}
	rows := make([]row, 0, budget)
	take := func(r row) bool {
		if len(rows) == budget {
			t.sweep = r.id // the next commit starts here
			return false
		}
		rows = append(rows, r)
		return true
	}
	start := t.sweep
	t.sweep = "" // unless take stops early, the next refresh starts at the first row
	t.primary.Ascend(row{id: start}, take)
	if len(rows) < budget { // the walk reached the end: on from the first row
		t.primary.Scan(func(r row) bool { return r.id < start && take(r) })
	}
	// A new isolation id: nodes this transaction wrote (and split) are
	// copied again too.
	t.primary = detach(t.primary)
	var hint btree.PathHint
	for _, r := range rows {
		t.primary.SetHint(r, &hint)
	}
}

// refreshPerInsert is how many rows refresh re-sets per row inserted: a
// walk over the whole table per quarter of it inserted. refreshChunk is the
// fewest it re-sets at once (about a millisecond), the whole of a smaller
// table.
const (
	refreshPerInsert = 4
	refreshChunk     = 2048
)

// version is every table at one commit; it is never written.
type version struct {
	tables []*table
}
