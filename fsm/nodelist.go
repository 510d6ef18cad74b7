package fsm

import (
	"slices"
	"sync/atomic"

	"github.com/amserver/amserver/internal/rowstore"
)

// nodeList remembers the latest full node listing of one store. The leader's
// duties (failover, drain, reconcile, the placer's index) each list every
// node whenever the state changes, which under load is after every batch of
// creates; with thousands of nodes those walks were an eighth of a loaded
// cluster's CPU although the nodes had not changed. The nodes table's
// change index identifies its content within one store, so a listing is
// reused until a write to the table moves the index.
type nodeList struct {
	db    *rowstore.DB
	index uint64
	nodes []*Node
}

// allNodes lists every node, from the cache when the table is unchanged.
// Callers get their own slice; the nodes themselves are shared, as always.
func (s *State) allNodes() []*Node {
	if s.nodes == nil {
		return all[Node](s.txn, tableNodes, "id")
	}
	index := s.Index(tableNodes)
	if c := s.nodes.Load(); c != nil && c.db == s.db && c.index == index {
		return slices.Clone(c.nodes)
	}
	list := all[Node](s.txn, tableNodes, "id")
	s.nodes.Store(&nodeList{db: s.db, index: index, nodes: list})
	return slices.Clone(list)
}

// nodeCache is where an FSM keeps its nodeList for the States it hands out.
type nodeCache = atomic.Pointer[nodeList]
