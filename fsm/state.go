package fsm

import (
	"iter"
	"slices"
	"strings"

	"github.com/amserver/amserver/internal/rowstore"
)

// State is a consistent, read-only view of the replicated state at one raft
// index. Readers and the scheduler work on it without blocking Apply. Objects
// it returns are shared: never modify them.
type State struct {
	txn *rowstore.Txn
	// db and nodes serve Nodes("") from a listing cache (nodelist.go); nil
	// in write transactions, whose nodes change under them.
	db    *rowstore.DB
	nodes *nodeCache
}

func newState(db *rowstore.DB) *State {
	return &State{txn: db.Txn(false)}
}

func first[T any](txn *rowstore.Txn, table, index, value string) *T {
	raw, err := txn.First(table, index, value)
	if err != nil || raw == nil {
		return nil
	}
	v, _ := raw.(*T)
	return v
}

// all lists a table's rows by index: every row, or those with the value.
func all[T any](txn *rowstore.Txn, table, index string, value ...string) []*T {
	var it rowstore.ResultIterator
	var err error
	if len(value) == 0 {
		it, err = txn.All(table, index)
	} else {
		it, err = txn.Get(table, index, value[0])
	}
	if err != nil {
		return nil
	}
	var out []*T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if v, ok := raw.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// Node returns a node or nil.
func (s *State) Node(id string) *Node { return first[Node](s.txn, tableNodes, "id", id) }

// Nodes returns nodes sorted by id; pool "" means every pool.
func (s *State) Nodes(pool string) []*Node {
	if pool == "" {
		return s.allNodes()
	}
	return all[Node](s.txn, tableNodes, "pool", pool)
}

// Pool returns a pool or nil.
func (s *State) Pool(name string) *Pool { return first[Pool](s.txn, tablePools, "id", name) }

// Pools returns every pool sorted by name.
func (s *State) Pools() []*Pool { return all[Pool](s.txn, tablePools, "id") }

// Bundle returns a bundle or nil.
func (s *State) Bundle(id string) *Bundle { return first[Bundle](s.txn, tableBundles, "id", id) }

// Bundles returns bundles sorted by id, filtered by pool and state when set.
// There is no pool index: a listing by pool reads every bundle (or every
// one in the state), which an API listing can afford; an index entry more
// on every bundle write and ~4% of the state's memory it could not.
func (s *State) Bundles(pool, state string) []*Bundle {
	var list []*Bundle
	if state != "" {
		list = all[Bundle](s.txn, tableBundles, "state", state)
	} else {
		list = all[Bundle](s.txn, tableBundles, "id")
	}
	if pool == "" {
		return list
	}
	out := list[:0]
	for _, b := range list {
		if b.Spec.Pool == pool {
			out = append(out, b)
		}
	}
	return out
}

// BundlesByTimer yields the bundles that have a timer (Bundle.NextTimer),
// earliest first; the leader's timers stop at the first one ahead.
func (s *State) BundlesByTimer() iter.Seq[*Bundle] {
	return func(yield func(*Bundle) bool) {
		it, err := s.txn.All(tableBundles, "timer")
		if err != nil {
			return
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			if !yield(raw.(*Bundle)) {
				return
			}
		}
	}
}

// BundlesInState returns the bundles in any of the given states, sorted by id
// within each state.
func (s *State) BundlesInState(states ...string) []*Bundle {
	var out []*Bundle
	for _, st := range states {
		out = append(out, all[Bundle](s.txn, tableBundles, "state", st)...)
	}
	return out
}

// count is how many rows have value in index, without reading them.
func count(txn *rowstore.Txn, table, index, value string) int {
	n, err := txn.Count(table, index, value)
	if err != nil {
		return 0
	}
	return n
}

// CountBundles is how many bundles are in state: a gauge's read, in time
// that does not grow with the bundles (rowstore.Txn.Count).
func (s *State) CountBundles(state string) int {
	return count(s.txn, tableBundles, "state", state)
}

// CountDegraded is how many bundles carry the degradation code.
func (s *State) CountDegraded(code string) int {
	return count(s.txn, tableBundles, "degradation", code)
}

// degradationCodes is a bundle's entries in the "degradation" index: the
// codes it carries, each once.
func degradationCodes(b *Bundle) []string {
	if len(b.Degradations) == 0 {
		return nil
	}
	codes := make([]string, 0, len(b.Degradations))
	for _, d := range b.Degradations {
		if !slices.Contains(codes, d.Code) {
			codes = append(codes, d.Code)
		}
	}
	return codes
}

// Assignment returns an assignment or nil.
func (s *State) Assignment(id string) *Assignment {
	return first[Assignment](s.txn, tableAssignments, "id", id)
}

// NodeAssignments returns what a node's worker must run (or stop).
func (s *State) NodeAssignments(node string) []*Assignment {
	return all[Assignment](s.txn, tableAssignments, "node", node)
}

// BundleAssignments returns a bundle's assignments on every node, sorted by
// id. Their ids start "bundle:" (bundle ids have no colon), so a range of
// the id index finds them without an index of their own; the id check
// skips service assignments ("svc:...") should a bundle be named "svc".
func (s *State) BundleAssignments(bundle string) []*Assignment {
	prefix := bundle + ":"
	it, err := s.txn.LowerBound(tableAssignments, "id", prefix)
	if err != nil {
		return nil
	}
	var out []*Assignment
	for raw := it.Next(); raw != nil; raw = it.Next() {
		a := raw.(*Assignment)
		if !strings.HasPrefix(a.ID, prefix) {
			break
		}
		if a.BundleID == bundle {
			out = append(out, a)
		}
	}
	return out
}

// ServiceAssignments returns a node service's assignments.
func (s *State) ServiceAssignments(service string) []*Assignment {
	return all[Assignment](s.txn, tableAssignments, "service", service)
}

// Service returns a node service or nil.
func (s *State) Service(id string) *NodeService {
	return first[NodeService](s.txn, tableServices, "id", id)
}

// Services returns every node service sorted by id.
func (s *State) Services() []*NodeService { return all[NodeService](s.txn, tableServices, "id") }

// Events returns up to limit events after the given raft index, oldest first.
func (s *State) Events(afterIndex uint64, limit int) []Event {
	if afterIndex == ^uint64(0) {
		return nil // nothing can follow the largest index (and +1 would wrap)
	}
	it, err := s.txn.LowerBound(tableEvents, "id", eventID(afterIndex+1, 0))
	if err != nil {
		return nil
	}
	var out []Event
	for raw := it.Next(); raw != nil && (limit <= 0 || len(out) < limit); raw = it.Next() {
		out = append(out, raw.(*eventRow).Event)
	}
	return out
}

// EventTypesAt calls fn with the type of every event committed at index,
// in order, without copying the events: the leader counts them per commit.
func (s *State) EventTypesAt(index uint64, fn func(typ string)) {
	if index == 0 {
		return
	}
	it, err := s.txn.LowerBound(tableEvents, "id", eventID(index, 0))
	if err != nil {
		return
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := &raw.(*eventRow).Event
		if e.Index != index {
			return
		}
		fn(e.Type)
	}
}

// Index returns the highest last-change index among the given tables (all
// tables when none are named).
func (s *State) Index(tables ...string) uint64 {
	if len(tables) == 0 {
		tables = Tables
	}
	var max uint64
	for _, t := range tables {
		if row := first[indexRow](s.txn, tableIndex, "id", t); row != nil && row.Index > max {
			max = row.Index
		}
	}
	return max
}

// LastTimer is the leader clock of the latest command that carried one.
func (s *State) LastTimer() int64 { return s.meta().LastTimer }

func (s *State) meta() metaRow {
	if row := first[metaRow](s.txn, tableMeta, "id", metaKey); row != nil {
		return *row
	}
	return metaRow{Key: metaKey}
}
