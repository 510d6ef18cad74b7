package fsm

import (
	"fmt"

	"github.com/amserver/amserver/internal/rowstore"

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

// Every table's primary index is its rows' id (rowstore.IDIndex); the
// secondary indexes below hold (value, id) pairs. An empty value leaves a
// row out of an index, as memdb's AllowMissing did, and the order of a
// listing by index is memdb's: by value, then by id.

func idOf[T any](pick func(*T) string) func(any) string {
	return func(row any) string { return pick(row.(*T)) }
}

func fieldIndex[T any](name string, pick func(*T) string) rowstore.IndexSchema {
	return rowstore.IndexSchema{Name: name, Value: idOf(pick)}
}

func table[T any](name string, id func(*T) string, indexes ...rowstore.IndexSchema) rowstore.TableSchema {
	return rowstore.TableSchema{Name: name, ID: idOf(id), Indexes: indexes}
}

func schema() rowstore.Schema {
	return rowstore.Schema{Tables: []rowstore.TableSchema{
		table(tableNodes, func(n *Node) string { return n.ID },
			fieldIndex("pool", func(n *Node) string { return n.Pool })),
		table(tablePools, func(p *Pool) string { return p.Name }),
		table(tableBundles, func(b *Bundle) string { return b.Spec.ID },
			fieldIndex("state", func(b *Bundle) string { return b.State }),
			rowstore.IndexSchema{Name: "node", Values: func(row any) []string { return bundleNodes(row.(*Bundle)) }},
			fieldIndex("timer", timerKey),
			fieldIndex("settling", settlingKey),
			rowstore.IndexSchema{Name: "degradation", Values: func(row any) []string { return degradationCodes(row.(*Bundle)) }}),
		table(tableReservations, func(r *reservationRow) string { return r.ID },
			fieldIndex("node", func(r *reservationRow) string { return r.NodeID })),
		table(tableAssignments, func(a *Assignment) string { return a.ID },
			fieldIndex("node", func(a *Assignment) string { return a.NodeID }),
			fieldIndex("service", func(a *Assignment) string { return a.ServiceID })),
		table(tableServices, func(s *NodeService) string { return s.ID }),
		table(tableEvents, func(e *eventRow) string { return e.ID }),
		table(tableIndex, func(r *indexRow) string { return r.Table }),
		table(tableMeta, func(m *metaRow) string { return m.Key }),
		table(tableACLTokens, func(t *ACLToken) string { return t.AccessorID },
			rowstore.IndexSchema{Name: "secret", Unique: true, Value: idOf(func(t *ACLToken) string { return t.SecretHash })}),
		table(tableKeyring, func(k *Keyring) string { return k.ID }),
		table(tableSpawns, func(s *Spawn) string { return s.ID },
			rowstore.IndexSchema{Name: "node", Unique: true, Value: idOf(func(s *Spawn) string { return s.NodeID })},
			fieldIndex("pool", func(s *Spawn) string { return s.Pool })),
		table(tableTemplates, func(t *Template) string { return t.Name }),
		table(tableBlobs, func(b *TemplateBlob) string { return b.Digest }),
		table(tableCaps, func(c *CapScope) string { return c.Name }),
	}}
}

func newDB() *rowstore.DB {
	db, err := rowstore.New(schema())
	if err != nil {
		panic(fmt.Sprintf("amserver: invalid state schema: %v", err)) // a programming error, caught by every test
	}
	return db
}
