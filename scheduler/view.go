package scheduler

import (
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// View is the read-only state the scheduler needs. *fsm.State implements it;
// objects it returns are shared and never modified here.
type View interface {
	// Node returns a node or nil.
	Node(id string) *fsm.Node
	// Nodes returns the nodes of a pool ("" for all) sorted by id.
	Nodes(pool string) []*fsm.Node
	// Pool returns a pool or nil.
	Pool(name string) *fsm.Pool
	// Bundle returns a bundle or nil.
	Bundle(id string) *fsm.Bundle
	// Reservation returns the reservation with key k.
	Reservation(k ledger.Key) (ledger.Reservation, bool)
	// NodeReservations returns what a node's reservations hold (preemption
	// and repair look at it).
	NodeReservations(node string) []ledger.Reservation
	// TemplateRuntime is the runtime of the template a ref names ("" when
	// none): what a template launch needs of a node.
	TemplateRuntime(ref string) string
	// CapScopeRow returns the cluster's or a cap group's caps and usage
	// (ledger.ClusterScope, ledger.GroupScope), or nil when it has none.
	CapScopeRow(name string) *fsm.CapScope
}

var _ View = (*fsm.State)(nil)

// viewStore is the ledger's read-only view of a snapshot: inventories and
// usage come from the index (the node rows of the snapshot), reservations
// from the view. Placement always writes through a ledger.Overlay on top of
// it and never commits the overlay, so the write methods are unreachable.
type viewStore struct {
	idx *index
}

var _ ledger.Store = viewStore{}

// Node implements ledger.Store.
func (s viewStore) Node(id string) (ledger.Inventory, ledger.Usage, bool) {
	n := s.idx.node(id)
	if n == nil {
		return ledger.Inventory{}, ledger.Usage{}, false
	}
	return n.inv, n.usage, true
}

// Pool implements ledger.Store; scopes are read from the view.
func (s viewStore) Pool(name string) (ledger.PoolCaps, ledger.PoolUsage) {
	if ledger.IsScope(name) {
		if row := s.idx.view.CapScopeRow(name); row != nil {
			return row.Caps, row.Usage
		}
		return ledger.PoolCaps{}, ledger.PoolUsage{}
	}
	p := s.idx.pool(name).cfg
	if p == nil {
		return ledger.PoolCaps{}, ledger.PoolUsage{}
	}
	return p.Caps, p.Usage
}

// PoolScopes implements ledger.Store.
func (s viewStore) PoolScopes(pool string) []string {
	if p := s.idx.pool(pool).cfg; p != nil {
		return ledger.ScopesOf(p.CapGroup)
	}
	return ledger.ScopesOf("")
}

// Reservation implements ledger.Store.
func (s viewStore) Reservation(k ledger.Key) (ledger.Reservation, bool) {
	return s.idx.view.Reservation(k)
}

func readOnly() { panic("scheduler: the snapshot store is read-only; write through a ledger.Overlay") }

// SetUsage implements ledger.Store; see viewStore.
func (viewStore) SetUsage(string, ledger.Usage) { readOnly() }

// SetPoolUsage implements ledger.Store; see viewStore.
func (viewStore) SetPoolUsage(string, ledger.PoolUsage) { readOnly() }

// PutReservation implements ledger.Store; see viewStore.
func (viewStore) PutReservation(ledger.Reservation) { readOnly() }

// DeleteReservation implements ledger.Store; see viewStore.
func (viewStore) DeleteReservation(ledger.Key) { readOnly() }
