package fsm

import (
	"fmt"
	"iter"
	"strings"

	"github.com/amserver/amserver/internal/rowstore"
)

// Paged listings (the API's ?per_page, ?next_token and ?prefix) walk a
// table's id index from a position instead of reading it whole, so a page
// costs what it holds, not what the table holds. Every id index encodes its
// string then a NUL (strIndexer), so index order is Go's string order.

// scanAfter yields the rows of table whose id is greater than after and
// starts with prefix, in id order. The rows are shared: never modify them.
func scanAfter[T any](txn *rowstore.Txn, table, after, prefix string) iter.Seq[*T] {
	return func(yield func(*T) bool) {
		it, err := txn.LowerBound(table, "id", max(after, prefix))
		if err != nil {
			return
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			row, ok := raw.(*T)
			if !ok {
				continue
			}
			id := rowID(row)
			if id == after {
				continue // LowerBound is inclusive; a page starts after its token
			}
			if !strings.HasPrefix(id, prefix) || !yield(row) {
				return
			}
		}
	}
}

// rowID is the id-index value of the row types that have listings.
func rowID(row any) string {
	switch r := row.(type) {
	case *Bundle:
		return r.Spec.ID
	case *Node:
		return r.ID
	case *Pool:
		return r.Name
	case *NodeService:
		return r.ID
	case *ACLToken:
		return r.AccessorID
	case *Template:
		return r.Name
	}
	panic(fmt.Sprintf("fsm: no listing id for %T", row)) // a new listing must name its id here
}

// BundlesAfter yields bundles with an id greater than after (every one when
// after is "") that start with prefix, in id order.
func (s *State) BundlesAfter(after, prefix string) iter.Seq[*Bundle] {
	return scanAfter[Bundle](s.txn, tableBundles, after, prefix)
}

// NodesAfter is BundlesAfter for nodes.
func (s *State) NodesAfter(after, prefix string) iter.Seq[*Node] {
	return scanAfter[Node](s.txn, tableNodes, after, prefix)
}

// PoolsAfter is BundlesAfter for pools, by name.
func (s *State) PoolsAfter(after, prefix string) iter.Seq[*Pool] {
	return scanAfter[Pool](s.txn, tablePools, after, prefix)
}

// ServicesAfter is BundlesAfter for node services.
func (s *State) ServicesAfter(after, prefix string) iter.Seq[*NodeService] {
	return scanAfter[NodeService](s.txn, tableServices, after, prefix)
}

// TemplatesAfter is BundlesAfter for templates, by name.
func (s *State) TemplatesAfter(after, prefix string) iter.Seq[*Template] {
	return scanAfter[Template](s.txn, tableTemplates, after, prefix)
}

// ACLTokensAfter is BundlesAfter for ACL tokens, by accessor id.
func (s *State) ACLTokensAfter(after, prefix string) iter.Seq[*ACLToken] {
	return scanAfter[ACLToken](s.txn, tableACLTokens, after, prefix)
}

// EventsPage returns the events after afterIndex, oldest first: about limit
// of them, never splitting the events of one raft entry, so that a reader
// resuming after the last index of a page misses nothing.
func (s *State) EventsPage(afterIndex uint64, limit int) []Event {
	if afterIndex == ^uint64(0) {
		return nil // nothing can follow the largest index (and +1 would wrap)
	}
	it, err := s.txn.LowerBound(tableEvents, "id", eventID(afterIndex+1, 0))
	if err != nil {
		return nil
	}
	var out []Event
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*eventRow).Event
		if len(out) >= limit && e.Index != out[len(out)-1].Index {
			break
		}
		out = append(out, e)
	}
	return out
}
