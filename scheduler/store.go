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
}

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
	if i, ok := s.idx.byID[node]; ok {
		s.dirty[i/64] |= 1 << (uint(i) % 64)
	}
	s.Overlay.SetUsage(node, used)
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
