package rowstore

import (
	"slices"
	"sync"
	"sync/atomic"
)

// DB is a store: the latest committed version, and a lock that lets one
// write transaction run at a time.
type DB struct {
	schema *compiled
	writer *sync.Mutex
	cur    atomic.Pointer[version]
}

// New makes an empty store.
func New(s Schema) (*DB, error) {
	c, err := compile(s)
	if err != nil {
		return nil, err
	}
	v := &version{}
	for ti := range c.Tables {
		v.tables = append(v.tables, newTable(c, ti))
	}
	db := &DB{schema: c, writer: &sync.Mutex{}}
	db.cur.Store(v)
	return db, nil
}

// Snapshot returns a store that starts at the current version; writes to
// either never show in the other.
func (db *DB) Snapshot() *DB {
	s := &DB{schema: db.schema, writer: &sync.Mutex{}}
	s.cur.Store(db.cur.Load())
	return s
}

// Txn starts a transaction. A write transaction waits for the one before
// it to commit or abort, and must end with one of them.
func (db *DB) Txn(write bool) *Txn {
	if write {
		db.writer.Lock()
	}
	t := &Txn{db: db, v: db.cur.Load(), write: write}
	if write {
		t.w = make([]*table, len(t.v.tables))
		t.gen = make([]uint64, len(t.v.tables))
		t.added = make([]int, len(t.v.tables))
	}
	return t
}

// Txn reads one version and, when it writes, builds the next.
type Txn struct {
	db    *DB
	v     *version
	write bool
	done  bool
	// w holds the tables this transaction wrote (detached copies), gen
	// counts the writes to each, so iterators over them notice a change.
	w   []*table
	gen []uint64
	// added counts, per table, the rows this transaction inserted new:
	// the writes that may split a node (table.refresh).
	added []int
}

// Commit publishes what a write transaction wrote; readers that started
// before keep their version. It does nothing for a read transaction or
// one already ended.
func (t *Txn) Commit() {
	if !t.write || t.done {
		return
	}
	t.done = true
	next := &version{tables: slices.Clone(t.v.tables)}
	for i, w := range t.w {
		if w != nil {
			w.refresh(t.added[i])
			next.tables[i] = w
		}
	}
	t.db.cur.Store(next)
	t.v = next
	t.w, t.added = nil, nil
	t.db.writer.Unlock()
}

// Abort throws a write transaction's changes away. It does nothing for a
// read transaction or one already ended, so it can be deferred.
func (t *Txn) Abort() {
	if !t.write || t.done {
		return
	}
	t.done = true
	t.w = nil
	t.db.writer.Unlock()
}

// read returns the table to read and, for one this transaction writes,
// its write counter.
func (t *Txn) read(ti int) (*table, *uint64) {
	if t.w != nil && t.w[ti] != nil {
		return t.w[ti], &t.gen[ti]
	}
	return t.v.tables[ti], nil
}

// writable returns the transaction's own copy of a table.
func (t *Txn) writable(ti int) *table {
	if t.w[ti] == nil {
		t.w[ti] = t.v.tables[ti].detached()
	}
	t.gen[ti]++
	return t.w[ti]
}
