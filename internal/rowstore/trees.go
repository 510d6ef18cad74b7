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
	// inserted counts the rows inserted since the last refresh.
	inserted int
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
	out := &table{primary: detach(t.primary), secondary: make([]*btree.BTreeG[entry], len(t.secondary)), inserted: t.inserted}
	for i, s := range t.secondary {
		out.secondary[i] = detach(s)
	}
	return out
}

// refresh copies every node of the primary tree into arrays of just its
// items, once the rows inserted since the last refresh reach a quarter of
// the table (amortized, about four row writes per insert).
//
// When the B-tree splits a full node, the new right node's items (and an
// inner node's children) stay in the array the left node keeps
// (tidwall/btree's nodeSplit reslices it): once the right node grows into
// an array of its own, the left one still holds the moved values in its
// spare capacity. A row replaced afterwards stayed reachable, with
// everything it held, for as long as that left node lived, which for a
// node no write touches again is as long as the store: at 100,000 bundles
// about half the bundles kept the version their create wrote (tens of
// MiB). Setting every row again under a new isolation id copies every node
// fresh; the split nodes are dropped with the versions that hold them.
func (t *table) refresh(inserted int) {
	t.inserted += inserted
	if t.inserted < max(t.primary.Len()/4, refreshMin) {
		return
	}
	t.inserted = 0
	rows := make([]row, 0, t.primary.Len())
	t.primary.Scan(func(r row) bool {
		rows = append(rows, r)
		return true
	})
	t.primary = detach(t.primary)
	var hint btree.PathHint
	for _, r := range rows {
		t.primary.SetHint(r, &hint)
	}
}

// refreshMin keeps small tables from refreshing on every few inserts.
const refreshMin = 64

// version is every table at one commit; it is never written.
type version struct {
	tables []*table
}
