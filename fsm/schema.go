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
)

// Tables lists every table in snapshot order; the index table comes last so a
// restore sees every row before the indexes that describe them.
var Tables = []string{
	tableNodes, tablePools, tableBundles, tableReservations, tableAssignments,
	tableServices, tableEvents, tableMeta, tableIndex,
}

// reservationRow stores a ledger reservation under its key string.
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

func idIndex(field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: field}}
}

func fieldIndex(name, field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: name, Indexer: &memdb.StringFieldIndex{Field: field}, AllowMissing: true}
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tableNodes: {Name: tableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex("ID"), "pool": fieldIndex("pool", "Pool"),
		}},
		tablePools: {Name: tablePools, Indexes: map[string]*memdb.IndexSchema{"id": idIndex("Name")}},
		tableBundles: {Name: tableBundles, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: bundleIndexer{pick: func(b *Bundle) string { return b.Spec.ID }}},
			"pool":  {Name: "pool", Indexer: bundleIndexer{pick: func(b *Bundle) string { return b.Spec.Pool }}},
			"state": {Name: "state", Indexer: bundleIndexer{pick: func(b *Bundle) string { return b.State }}},
		}},
		tableReservations: {Name: tableReservations, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex("ID"), "node": fieldIndex("node", "NodeID"),
		}},
		tableAssignments: {Name: tableAssignments, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex("ID"), "node": fieldIndex("node", "NodeID"), "bundle": fieldIndex("bundle", "BundleID"),
			"service": fieldIndex("service", "ServiceID"),
		}},
		tableServices: {Name: tableServices, Indexes: map[string]*memdb.IndexSchema{"id": idIndex("ID")}},
		tableEvents:   {Name: tableEvents, Indexes: map[string]*memdb.IndexSchema{"id": idIndex("ID")}},
		tableIndex:    {Name: tableIndex, Indexes: map[string]*memdb.IndexSchema{"id": idIndex("Table")}},
		tableMeta:     {Name: tableMeta, Indexes: map[string]*memdb.IndexSchema{"id": idIndex("Key")}},
	}}
}

// bundleIndexer indexes a field of the nested spec, which StringFieldIndex
// cannot reach.
type bundleIndexer struct {
	pick func(*Bundle) string
}

func (x bundleIndexer) FromObject(obj any) (bool, []byte, error) {
	b, ok := obj.(*Bundle)
	if !ok {
		return false, nil, fmt.Errorf("bundle index: unexpected %T", obj)
	}
	v := x.pick(b)
	if v == "" {
		return false, nil, nil
	}
	return true, append([]byte(v), 0), nil
}

func (x bundleIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("bundle index: want one argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("bundle index: argument must be a string, got %T", args[0])
	}
	return append([]byte(s), 0), nil
}

func newDB() *memdb.MemDB {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		panic(fmt.Sprintf("amserver: invalid state schema: %v", err)) // a programming error, caught by every test
	}
	return db
}
