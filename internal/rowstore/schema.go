// Package rowstore is the replicated state's in-memory store: tables of
// rows on copy-on-write B-trees with secondary indexes, one writer at a time
// and any number of readers, each reading an immutable version.
//
// It replaces go-memdb for the FSM (docs/performance.md): memdb's radix
// trees give every node a watch channel and every index the row pointer, so
// an update rewrites every index path, and half the state's heap was index
// bookkeeping. Here a secondary index holds (value, id) pairs and an update
// that leaves an indexed value alone does not touch that index.
package rowstore

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned by Delete for a row that is not there.
var ErrNotFound = errors.New("rowstore: not found")

// IDIndex names the primary index of every table: rows by id.
const IDIndex = "id"

// IndexSchema describes a secondary index. Exactly one of Value and Values
// is set.
type IndexSchema struct {
	Name string
	// Unique indexes hold one row per value; inserting a second row with a
	// value takes the entry over, as memdb did.
	Unique bool
	// Value is the row's value in the index; "" leaves the row out.
	Value func(row any) string
	// Values gives a row several entries, sorted and distinct; none leaves
	// the row out.
	Values func(row any) []string
}

// TableSchema describes a table: its rows' ids and its secondary indexes.
type TableSchema struct {
	Name    string
	ID      func(row any) string
	Indexes []IndexSchema
}

// Schema is every table of a store.
type Schema struct {
	Tables []TableSchema
	// Degree is the B-trees' degree (0: 16); a node holds up to 2*Degree-1
	// rows, and a write in a new transaction copies one node per level.
	Degree int
}

// compiled is a schema with its names resolved to positions.
type compiled struct {
	Schema
	tables  map[string]int
	indexes []map[string]int // per table: index name -> position
}

func compile(s Schema) (*compiled, error) {
	c := &compiled{Schema: s, tables: map[string]int{}}
	if c.Degree == 0 {
		c.Degree = 16
	}
	for ti, t := range s.Tables {
		if t.Name == "" || t.ID == nil {
			return nil, fmt.Errorf("rowstore: table %d needs a name and an id", ti)
		}
		if _, dup := c.tables[t.Name]; dup {
			return nil, fmt.Errorf("rowstore: table %s declared twice", t.Name)
		}
		c.tables[t.Name] = ti
		names := map[string]int{}
		for ii, ix := range t.Indexes {
			if ix.Name == "" || ix.Name == IDIndex || (ix.Value == nil) == (ix.Values == nil) {
				return nil, fmt.Errorf("rowstore: table %s index %d: a name other than %q and exactly one of Value and Values", t.Name, ii, IDIndex)
			}
			if _, dup := names[ix.Name]; dup {
				return nil, fmt.Errorf("rowstore: table %s index %s declared twice", t.Name, ix.Name)
			}
			names[ix.Name] = ii
		}
		c.indexes = append(c.indexes, names)
	}
	return c, nil
}

// lookup resolves a table and index name; index -1 is the primary.
func (c *compiled) lookup(table, index string) (int, int, error) {
	ti, ok := c.tables[table]
	if !ok {
		return 0, 0, fmt.Errorf("rowstore: no table %q", table)
	}
	if index == IDIndex {
		return ti, -1, nil
	}
	ii, ok := c.indexes[ti][index]
	if !ok {
		return 0, 0, fmt.Errorf("rowstore: table %s has no index %q", table, index)
	}
	return ti, ii, nil
}

// values appends a row's values in index ix to dst.
func (ix *IndexSchema) values(row any, dst []string) []string {
	if ix.Value != nil {
		if v := ix.Value(row); v != "" {
			dst = append(dst, v)
		}
		return dst
	}
	return append(dst, ix.Values(row)...)
}
