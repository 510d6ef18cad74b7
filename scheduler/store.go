package scheduler

import (
	"github.com/amserver/amserver/ledger"
)

// batchStore is a batch's ledger overlay that remembers which nodes' usage
// it changed. Every other node's usage is its snapshot row's, read without
// the two string-keyed map lookups a plain overlay costs; with thousands of
// nodes evaluated per second that is most of an evaluation.
type batchStore struct {
	*ledger.Overlay
	idx   *index
	dirty []uint64 // bit per node position

	// While a checkpoint is open every write is journaled with the value it
	// replaces, so a what-if (a drain that does not fit, a preemption trial)
	// can be taken back in place: a second overlay would cost the fast
	// usage path above on every evaluation of the trial's search.
	open    int
	journal []undoEntry
	// last is the latest reservation read: ledger.Release reads a
	// reservation and then deletes it, and journaling the delete would
	// otherwise look it up a second time in the snapshot's state store.
	last struct {
		key   ledger.Key
		res   ledger.Reservation
		found bool
		valid bool
	}
}

// undoEntry is the value one write replaced.
type undoEntry struct {
	kind      undoKind
	name      string // node or pool
	key       ledger.Key
	usage     ledger.Usage
	poolUsage ledger.PoolUsage
	res       ledger.Reservation
	had       bool // the reservation existed
	clean     bool // the node's usage was the snapshot's before the write
}

type undoKind uint8

const (
	undoUsage undoKind = iota
	undoPoolUsage
	undoReservation
)

var _ ledger.Store = (*batchStore)(nil)

func newBatchStore(idx *index) *batchStore {
	return &batchStore{
		Overlay: ledger.NewOverlay(viewStore{idx: idx}),
		idx:     idx,
		dirty:   make([]uint64, (len(idx.nodes)+63)/64),
	}
}

// SetUsage implements ledger.Store, marking the node.
func (s *batchStore) SetUsage(node string, used ledger.Usage) {
	i, known := s.idx.byID[node]
	if s.open > 0 {
		_, old, _ := s.Overlay.Node(node)
		clean := known && s.dirty[i/64]&(1<<(uint(i)%64)) == 0
		s.journal = append(s.journal, undoEntry{kind: undoUsage, name: node, usage: old, clean: clean})
	}
	if known {
		s.dirty[i/64] |= 1 << (uint(i) % 64)
	}
	s.Overlay.SetUsage(node, used)
}

// SetPoolUsage implements ledger.Store.
func (s *batchStore) SetPoolUsage(pool string, used ledger.PoolUsage) {
	if s.open > 0 {
		_, old := s.Overlay.Pool(pool)
		s.journal = append(s.journal, undoEntry{kind: undoPoolUsage, name: pool, poolUsage: old})
	}
	s.Overlay.SetPoolUsage(pool, used)
}

// PutReservation implements ledger.Store.
func (s *batchStore) PutReservation(r ledger.Reservation) {
	s.note(r.Key)
	s.Overlay.PutReservation(r)
}

// DeleteReservation implements ledger.Store.
func (s *batchStore) DeleteReservation(k ledger.Key) {
	s.note(k)
	s.Overlay.DeleteReservation(k)
}

// Reservation implements ledger.Store, remembering the answer.
func (s *batchStore) Reservation(k ledger.Key) (ledger.Reservation, bool) {
	if s.last.valid && s.last.key == k {
		return s.last.res, s.last.found
	}
	r, ok := s.Overlay.Reservation(k)
	s.last.key, s.last.res, s.last.found, s.last.valid = k, r, ok, true
	return r, ok
}

func (s *batchStore) note(k ledger.Key) {
	if s.open > 0 {
		old, had := s.Reservation(k)
		s.journal = append(s.journal, undoEntry{kind: undoReservation, key: k, res: old, had: had})
	}
	s.last.valid = false
}

// checkpoint opens a what-if; it must be closed by rollback or keep, inner
// checkpoints before outer ones.
func (s *batchStore) checkpoint() int {
	s.open++
	return len(s.journal)
}

// rollback undoes every write since the checkpoint and closes it.
func (s *batchStore) rollback(mark int) {
	s.undoTo(mark)
	s.open--
}

// journalLen is a position inside an open checkpoint to undo back to later.
func (s *batchStore) journalLen() int { return len(s.journal) }

// undoTo undoes the writes journaled after pos, newest first, leaving the
// checkpoint open. Restored values land in the overlay even when they came
// from the snapshot; reads cannot tell the difference.
func (s *batchStore) undoTo(pos int) {
	s.last.valid = false
	for i := len(s.journal) - 1; i >= pos; i-- {
		e := &s.journal[i]
		switch e.kind {
		case undoUsage:
			s.Overlay.SetUsage(e.name, e.usage)
			if e.clean { // back to the snapshot's value: the fast path may read it again
				i := s.idx.byID[e.name]
				s.dirty[i/64] &^= 1 << (uint(i) % 64)
			}
		case undoPoolUsage:
			s.Overlay.SetPoolUsage(e.name, e.poolUsage)
		case undoReservation:
			if e.had {
				s.Overlay.PutReservation(e.res)
			} else {
				s.Overlay.DeleteReservation(e.key)
			}
		}
	}
	s.journal = s.journal[:pos]
}

// keep closes a checkpoint and keeps its writes; an enclosing checkpoint can
// still take them back.
func (s *batchStore) keep(int) {
	s.open--
	if s.open == 0 {
		s.journal = s.journal[:0]
	}
}

// Commit is not for batches: the base is a read-only snapshot. The plan is
// how a batch's decisions reach the state.
func (s *batchStore) Commit() { readOnly() }

func (s *batchStore) usage(n *nodeInfo) ledger.Usage {
	if s.dirty[n.pos/64]&(1<<(uint(n.pos)%64)) == 0 {
		return n.usage
	}
	_, used, _ := s.Overlay.Node(n.node.ID)
	return used
}

// usageReader reads a node's current usage for a search.
type usageReader interface {
	usage(n *nodeInfo) ledger.Usage
}

// storeUsage reads through any ledger.Store.
type storeUsage struct{ store ledger.Store }

func (s storeUsage) usage(n *nodeInfo) ledger.Usage {
	_, used, _ := s.store.Node(n.node.ID)
	return used
}

// usageOf picks the fast reader when store is this snapshot's batch store.
func usageOf(sn *Snapshot, store ledger.Store) usageReader {
	if bs, ok := store.(*batchStore); ok && bs.idx == sn.idx {
		return bs
	}
	return storeUsage{store: store}
}
