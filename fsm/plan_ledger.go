package fsm

import (
	"maps"
	"slices"

	"github.com/amserver/amserver/ledger"
)

// planLedger is the ledger a plan's parts commit into. Node and pool usage
// are buffered and written once per plan, in sorted order: binpack lands
// many parts on the same nodes, and each node write is a row copy and two
// index entries. Reservations go straight to the transaction, where a
// bundle's are derived from the bundle row each part writes (reservations.go)
// and only a service's is a row, so buffering them would only cost.
type planLedger struct {
	tx    txLedger
	usage map[string]ledger.Usage
	pools map[string]ledger.PoolUsage
}

var _ ledger.Store = (*planLedger)(nil)

func newPlanLedger(t *tx) *planLedger {
	return &planLedger{tx: t.ledgerStore(), usage: map[string]ledger.Usage{}, pools: map[string]ledger.PoolUsage{}}
}

// Node implements ledger.Store.
func (l *planLedger) Node(id string) (ledger.Inventory, ledger.Usage, bool) {
	inv, used, ok := l.tx.Node(id)
	if u, buffered := l.usage[id]; ok && buffered {
		used = u
	}
	return inv, used, ok
}

// Pool implements ledger.Store.
func (l *planLedger) Pool(name string) (ledger.PoolCaps, ledger.PoolUsage) {
	caps, used := l.tx.Pool(name)
	if u, buffered := l.pools[name]; buffered {
		used = u
	}
	return caps, used
}

// PoolScopes implements ledger.Store.
func (l *planLedger) PoolScopes(pool string) []string { return l.tx.PoolScopes(pool) }

// Reservation implements ledger.Store.
func (l *planLedger) Reservation(k ledger.Key) (ledger.Reservation, bool) {
	return l.tx.Reservation(k)
}

// SetUsage implements ledger.Store.
func (l *planLedger) SetUsage(node string, used ledger.Usage) { l.usage[node] = used }

// SetPoolUsage implements ledger.Store.
func (l *planLedger) SetPoolUsage(pool string, used ledger.PoolUsage) { l.pools[pool] = used }

// PutReservation implements ledger.Store.
func (l *planLedger) PutReservation(r ledger.Reservation) { l.tx.PutReservation(r) }

// DeleteReservation implements ledger.Store.
func (l *planLedger) DeleteReservation(k ledger.Key) { l.tx.DeleteReservation(k) }

// flush writes the buffered usage to the transaction.
func (l *planLedger) flush() {
	for _, id := range slices.Sorted(maps.Keys(l.usage)) {
		l.tx.SetUsage(id, l.usage[id])
	}
	for _, name := range slices.Sorted(maps.Keys(l.pools)) {
		l.tx.SetPoolUsage(name, l.pools[name])
	}
	clear(l.usage)
	clear(l.pools)
}
