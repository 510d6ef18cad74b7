package fsm

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/amserver/amserver/ledger"
)

// Table names.
const (
	tableNodes        = "nodes"
	tablePools        = "pools"
	tableBundles      = "bundles"
	tableReservations = "reservations"
	tableAssignments  = "assignments"
	tableServices     = "services"
	tableEvents       = "events"
	tableIndex        = "index"
	tableMeta         = "meta"
	tableKeyring      = "keyring"
	tableSpawns       = "spawns"
	tableTemplates    = "templates"
	tableBlobs        = "blobs"
	tableCaps         = "caps"
)

// Tables lists every table in snapshot order; the index table comes last so a
// restore sees every row before the indexes that describe them.
var Tables = []string{
	tableNodes, tablePools, tableBundles, tableReservations, tableAssignments,
	tableServices, tableEvents, tableKeyring, tableSpawns, tableTemplates, tableBlobs, tableCaps, tableMeta, tableACLTokens, tableIndex,
}

// reservationRow stores a node service's ledger reservation under its key
// string; bundles' reservations are derived from their rows (reservations.go).
type reservationRow struct {
	ID          string
	BundleID    string
	NodeID      string
	Reservation ledger.Reservation
}

// indexRow tracks the raft index of a table's last change, for blocking queries.
type indexRow struct {
	Table string
	Index uint64
}

// metaRow holds cluster-wide scalars under a fixed key.
type metaRow struct {
	Key string
	// LastTimer is the leader clock carried by the latest timer-bearing command.
	LastTimer int64
	// Events counts the rows of the event table, so pruning never scans it.
	Events int
}

const metaKey = "cluster"

// eventRow keys events by zero-padded index and sequence so string order is
// numeric order.
type eventRow struct {
	ID    string
	Event Event
}

func eventID(index uint64, seq int) string {
	return fmt.Sprintf("%020d-%05d", index, seq)
}

// The indexers are typed rather than memdb's reflective StringFieldIndex:
// every row write computes each index twice (new and old row), and the
// reflective field lookup was a visible share of plan apply. They encode
// exactly as StringFieldIndex does (the string, then a NUL; an empty string
// is a missing value), so index order and snapshots are unchanged.

func idIndex[T any](pick func(*T) string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: strIndexer[T]{pick: pick}}
}

func fieldIndex[T any](name string, pick func(*T) string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: name, Indexer: strIndexer[T]{pick: pick}, AllowMissing: true}
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tableNodes: {Name: tableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id":   idIndex(func(n *Node) string { return n.ID }),
			"pool": fieldIndex("pool", func(n *Node) string { return n.Pool }),
		}},
		tablePools: {Name: tablePools, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(p *Pool) string { return p.Name })}},
		tableBundles: {Name: tableBundles, Indexes: map[string]*memdb.IndexSchema{
			"id":    idIndex(func(b *Bundle) string { return b.Spec.ID }),
			"state": fieldIndex("state", func(b *Bundle) string { return b.State }),
			"node":  {Name: "node", Indexer: bundleNodesIndexer{}, AllowMissing: true},
		}},
		tableReservations: {Name: tableReservations, Indexes: map[string]*memdb.IndexSchema{
			"id":   idIndex(func(r *reservationRow) string { return r.ID }),
			"node": fieldIndex("node", func(r *reservationRow) string { return r.NodeID }),
		}},
		tableAssignments: {Name: tableAssignments, Indexes: map[string]*memdb.IndexSchema{
			"id":      idIndex(func(a *Assignment) string { return a.ID }),
			"node":    fieldIndex("node", func(a *Assignment) string { return a.NodeID }),
			"service": fieldIndex("service", func(a *Assignment) string { return a.ServiceID }),
		}},
		tableServices: {Name: tableServices, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(s *NodeService) string { return s.ID })}},
		tableEvents:   {Name: tableEvents, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(e *eventRow) string { return e.ID })}},
		tableIndex:    {Name: tableIndex, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(r *indexRow) string { return r.Table })}},
		tableMeta:     {Name: tableMeta, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(m *metaRow) string { return m.Key })}},
		tableACLTokens: {Name: tableACLTokens, Indexes: map[string]*memdb.IndexSchema{
			"id":     idIndex(func(t *ACLToken) string { return t.AccessorID }),
			"secret": {Name: "secret", Unique: true, Indexer: strIndexer[ACLToken]{pick: func(t *ACLToken) string { return t.SecretHash }}},
		}},
		tableKeyring: {Name: tableKeyring, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(k *Keyring) string { return k.ID })}},
		tableSpawns: {Name: tableSpawns, Indexes: map[string]*memdb.IndexSchema{
			"id":   idIndex(func(s *Spawn) string { return s.ID }),
			"node": {Name: "node", Unique: true, Indexer: strIndexer[Spawn]{pick: func(s *Spawn) string { return s.NodeID }}},
			"pool": fieldIndex("pool", func(s *Spawn) string { return s.Pool }),
		}},
		tableTemplates: {Name: tableTemplates, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(t *Template) string { return t.Name })}},
		tableBlobs:     {Name: tableBlobs, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(b *TemplateBlob) string { return b.Digest })}},
		tableCaps:      {Name: tableCaps, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(func(c *CapScope) string { return c.Name })}},
	}}
}

// strIndexer indexes one string field of a row type.
type strIndexer[T any] struct {
	pick func(*T) string
}

func (x strIndexer[T]) FromObject(obj any) (bool, []byte, error) {
	row, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("index: unexpected row %T", obj)
	}
	v := x.pick(row)
	if v == "" {
		return false, nil, nil
	}
	out := make([]byte, len(v)+1)
	copy(out, v)
	return true, out, nil
}

func (x strIndexer[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("index: want one argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("index: argument must be a string, got %T", args[0])
	}
	return append([]byte(s), 0), nil
}

func newDB() *memdb.MemDB {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		panic(fmt.Sprintf("amserver: invalid state schema: %v", err)) // a programming error, caught by every test
	}
	// A memdb snapshot is the same store without watch bookkeeping: the
	// primary tracks every radix node a write copies and closes its channel
	// on commit, and a transaction touching more than 8,192 nodes of one
	// index walks that index's whole tree to notify. Nothing here watches
	// memdb (blocking queries wait on the FSM's own channel), so the state
	// lives in a snapshot from the start.
	return db.Snapshot()
}
