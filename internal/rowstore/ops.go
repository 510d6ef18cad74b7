package rowstore

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/tidwall/btree"
)

var errEnded = errors.New("rowstore: write after the transaction ended")

// Insert writes a row under its id, replacing the row there, and updates
// the secondary indexes whose values changed.
func (t *Txn) Insert(table string, obj any) error {
	ti, err := t.writeTable(table)
	if err != nil {
		return err
	}
	ts := &t.db.schema.Tables[ti]
	id := ts.ID(obj)
	if id == "" {
		return fmt.Errorf("rowstore: insert into %s: a row needs an id", table)
	}
	tb := t.writable(ti)
	old, replaced := tb.primary.Load(row{id: id, obj: obj}) // appends in place for rows in id order
	if !replaced {
		t.added[ti]++
	}
	var oldVals, newVals [4]string
	for ii := range ts.Indexes {
		ix := &ts.Indexes[ii]
		var before []string
		if replaced {
			before = ix.values(old.obj, oldVals[:0])
		}
		after := ix.values(obj, newVals[:0])
		if !ix.Unique && slices.Equal(before, after) {
			continue // a unique value may have been taken over: always reclaim it
		}
		sec := tb.secondary[ii]
		for _, v := range before {
			sec.Delete(entry{key: v, id: id})
		}
		for _, v := range after {
			if ix.Unique {
				dropOther(sec, v, id)
			}
			sec.Set(entry{key: v, id: id})
		}
	}
	return nil
}

// dropOther removes a unique index's entry for value held by another row.
func dropOther(sec *btree.BTreeG[entry], value, id string) {
	var stale []entry
	sec.Ascend(entry{key: value}, func(e entry) bool {
		if e.key != value {
			return false
		}
		if e.id != id {
			stale = append(stale, e)
		}
		return true
	})
	for _, e := range stale {
		sec.Delete(e)
	}
}

// Delete removes the row with obj's id; its index entries are those of the
// stored row.
func (t *Txn) Delete(table string, obj any) error {
	ti, err := t.writeTable(table)
	if err != nil {
		return err
	}
	ts := &t.db.schema.Tables[ti]
	id := ts.ID(obj)
	if cur, _ := t.read(ti); !has(cur, id) {
		return fmt.Errorf("delete %s %q: %w", table, id, ErrNotFound)
	}
	tb := t.writable(ti)
	old, _ := tb.primary.Delete(row{id: id})
	var vals [4]string
	for ii := range ts.Indexes {
		for _, v := range ts.Indexes[ii].values(old.obj, vals[:0]) {
			tb.secondary[ii].Delete(entry{key: v, id: id})
		}
	}
	return nil
}

func has(tb *table, id string) bool {
	_, ok := tb.primary.Get(row{id: id})
	return ok
}

func (t *Txn) writeTable(table string) (int, error) {
	if !t.write || t.done {
		return 0, errEnded
	}
	ti, ok := t.db.schema.tables[table]
	if !ok {
		return 0, fmt.Errorf("rowstore: no table %q", table)
	}
	return ti, nil
}

// First returns the first row whose value in index is value (by id for
// IDIndex), or nil.
func (t *Txn) First(table, index, value string) (any, error) {
	ti, ii, err := t.db.schema.lookup(table, index)
	if err != nil {
		return nil, err
	}
	tb, _ := t.read(ti)
	if ii < 0 {
		r, ok := tb.primary.Get(row{id: value})
		if !ok {
			return nil, nil
		}
		return r.obj, nil
	}
	var found any
	tb.secondary[ii].Ascend(entry{key: value}, func(e entry) bool {
		if e.key == value {
			if r, ok := tb.primary.Get(row{id: e.id}); ok {
				found = r.obj
			}
		}
		return false
	})
	return found, nil
}

// Count is how many rows have value in index (0 or 1 for IDIndex), without
// visiting them: the index trees keep a count per node, so two binary
// searches by position find where value's entries start and end, each step
// a descent of the tree. A gauge over a state of 100,000 bundles read it by
// listing them all, on every /metrics scrape.
func (t *Txn) Count(table, index, value string) (int, error) {
	ti, ii, err := t.db.schema.lookup(table, index)
	if err != nil {
		return 0, err
	}
	tb, _ := t.read(ti)
	if ii < 0 {
		if has(tb, value) {
			return 1, nil
		}
		return 0, nil
	}
	sec := tb.secondary[ii]
	n := sec.Len()
	key := func(i int) string {
		e, _ := sec.GetAt(i)
		return e.key
	}
	lo := sort.Search(n, func(i int) bool { return key(i) >= value })
	hi := lo + sort.Search(n-lo, func(i int) bool { return key(lo+i) > value })
	return hi - lo, nil
}

// Get iterates the rows whose value in index is value, in index order.
func (t *Txn) Get(table, index, value string) (ResultIterator, error) {
	return t.iterate(table, index, value, true)
}

// All iterates every row of an index, in index order (by id for IDIndex).
func (t *Txn) All(table, index string) (ResultIterator, error) {
	return t.iterate(table, index, "", false)
}

// LowerBound iterates the rows from the first whose value in index is at
// least value, to the end of the index.
func (t *Txn) LowerBound(table, index, value string) (ResultIterator, error) {
	return t.iterate(table, index, value, false)
}

func (t *Txn) iterate(table, index, value string, exact bool) (ResultIterator, error) {
	ti, ii, err := t.db.schema.lookup(table, index)
	if err != nil {
		return nil, err
	}
	tb, gen := t.read(ti)
	if ii < 0 {
		c := newCursor(tb.primary, row{id: value}, gen)
		if exact {
			return &primaryIter{c: c, exact: value}, nil
		}
		return &primaryIter{c: c, all: true}, nil
	}
	c := newCursor(tb.secondary[ii], entry{key: value}, gen)
	return &secondaryIter{c: c, tb: tb, exact: exact, value: value}, nil
}
