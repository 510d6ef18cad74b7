package rowstore

import (
	"github.com/tidwall/btree"
)

// ResultIterator yields rows until it returns nil.
type ResultIterator interface {
	Next() any
}

// cursor walks a tree in order from a start key. On a tree the
// transaction is writing, a write can move the nodes under it, so when the
// table's write counter moved since its last step it seeks again past the
// last item it gave: it then sees the table as it is now, which memdb's
// iterators did not (they read a clone), and no caller relies on either.
type cursor[T any] struct {
	tree    *btree.BTreeG[T]
	it      btree.IterG[T]
	gen     *uint64 // nil for a published tree, which never changes
	seen    uint64
	start   T
	last    T
	started bool
	done    bool
}

func newCursor[T any](tree *btree.BTreeG[T], start T, gen *uint64) *cursor[T] {
	c := &cursor[T]{tree: tree, start: start, gen: gen}
	if gen != nil {
		c.seen = *gen
	}
	return c
}

// next returns the next item, or false at the end.
func (c *cursor[T]) next() (T, bool) {
	var zero T
	if c.done {
		return zero, false
	}
	var ok bool
	switch {
	case !c.started:
		c.started = true
		c.it = c.tree.Iter()
		ok = c.it.Seek(c.start)
	case c.gen != nil && *c.gen != c.seen:
		c.seen = *c.gen
		c.it.Release()
		c.it = c.tree.Iter()
		ok = c.it.Seek(c.last)
		if ok && !c.tree.Less(c.last, c.it.Item()) {
			ok = c.it.Next() // the last item is still there: step past it
		}
	default:
		ok = c.it.Next()
	}
	if !ok {
		c.done = true
		c.it.Release()
		return zero, false
	}
	c.last = c.it.Item()
	return c.last, true
}

// primaryIter yields rows by id: every one from the start (all) or the
// one with the exact id.
type primaryIter struct {
	c     *cursor[row]
	all   bool
	exact string
}

func (p *primaryIter) Next() any {
	r, ok := p.c.next()
	if !ok || (!p.all && r.id != p.exact) {
		p.c.done = true
		return nil
	}
	return r.obj
}

// secondaryIter yields the rows of index entries: those with the exact
// value, or every one from the start.
type secondaryIter struct {
	c     *cursor[entry]
	tb    *table
	exact bool
	value string
}

func (s *secondaryIter) Next() any {
	for {
		e, ok := s.c.next()
		if !ok || (s.exact && e.key != s.value) {
			s.c.done = true
			return nil
		}
		if r, ok := s.tb.primary.Get(row{id: e.id}); ok {
			return r.obj
		}
	}
}
