package fsm

import (
	"fmt"

	"github.com/amserver/amserver/internal/rowstore"

	"github.com/amserver/amserver/ledger"
)

// maxEvents bounds the replicated event log; older events are pruned in the
// same deterministic way on every replica.
const maxEvents = 10000

// tx is one command's write transaction. It stamps modify indexes, records
// which tables changed (for blocking queries) and collects events.
type tx struct {
	State
	index   uint64
	now     int64
	changed map[string]bool
	events  []Event
	// basis is the state index a plan was computed on (Plan.Basis).
	basis uint64
	// lost are a failover plan's lost nodes (Plan.Lost).
	lost []string
	// recount is a plan's DegradedRecount.
	recount bool
	// eval evaluates constraints in a plan's re-check (Config.Eval).
	eval ExprEvaluator
	// relaunchUnavailable: the command asks a service's rollout to
	// relaunch its unavailable replicas first (advanceRollout); commands
	// from older leaders do not, and replay as they applied then.
	relaunchUnavailable bool
	// settleRollout: a replica the rollout relaunches joins the bundle's
	// Settling (rollout_settle.go); commands from older leaders do not.
	settleRollout bool
}

var _ ledger.Store = txLedger{}

// newTx starts a command in txn, a write transaction it may share with the
// commands before it in a batch.
func newTx(txn *rowstore.Txn, index uint64) *tx {
	t := &tx{State: State{txn: txn}, index: index, changed: map[string]bool{}}
	t.now = t.LastTimer()
	return t
}

// insert writes a row; every failure here is a schema bug, never user input.
func (t *tx) insert(table string, obj any) {
	if err := t.txn.Insert(table, obj); err != nil {
		panic(fmt.Sprintf("amserver: insert into %s: %v", table, err))
	}
	t.changed[table] = true
}

func (t *tx) delete(table string, obj any) {
	if err := t.txn.Delete(table, obj); err != nil {
		panic(fmt.Sprintf("amserver: delete from %s: %v", table, err))
	}
	t.changed[table] = true
}

func (t *tx) putNode(n *Node) {
	n.ModifyIndex = t.index
	t.insert(tableNodes, n)
}

func (t *tx) putPool(p *Pool) {
	p.ModifyIndex = t.index
	t.insert(tablePools, p)
}

func (t *tx) putBundle(b *Bundle) {
	b.ModifyIndex = t.index
	for i := range b.Replicas {
		r := &b.Replicas[i]
		r.Role, r.State = b.Spec.RoleAt(i), replicaState(r)
	}
	b.State = deriveState(b, t.now)
	t.insert(tableBundles, b)
}

func (t *tx) putAssignment(a *Assignment) {
	a.ModifyIndex = t.index
	t.insert(tableAssignments, a)
}

func (t *tx) event(typ, bundleID, nodeID, format string, args ...any) {
	t.events = append(t.events, Event{
		Index: t.index, Seq: len(t.events), Time: t.now, Type: typ,
		BundleID: bundleID, NodeID: nodeID, Message: fmt.Sprintf(format, args...),
	})
}

// finish writes events, the meta row and table indexes; the caller commits.
func (t *tx) finish() {
	meta := t.meta()
	before := meta
	for _, e := range t.events {
		t.insert(tableEvents, &eventRow{ID: eventID(e.Index, e.Seq), Event: e})
	}
	meta.Events += len(t.events)
	if meta.Events > maxEvents {
		meta.Events -= t.pruneEvents(meta.Events - maxEvents)
	}
	meta.LastTimer = max(meta.LastTimer, t.now)
	if meta != before {
		t.insert(tableMeta, &meta)
	}
	for _, table := range Tables {
		if t.changed[table] && table != tableIndex {
			t.insert(tableIndex, &indexRow{Table: table, Index: t.index})
		}
	}
}

// pruneEvents deletes up to n of the oldest events and returns how many.
func (t *tx) pruneEvents(n int) int {
	it, err := t.txn.All(tableEvents, "id")
	if err != nil {
		return 0
	}
	stale := make([]any, 0, n)
	for raw := it.Next(); raw != nil && len(stale) < n; raw = it.Next() {
		stale = append(stale, raw)
	}
	for _, row := range stale {
		t.delete(tableEvents, row)
	}
	return len(stale)
}

// txLedger is the ledger's view of a write transaction.
type txLedger struct{ t *tx }

func (t *tx) ledgerStore() txLedger { return txLedger{t: t} }

// Node implements ledger.Store.
func (l txLedger) Node(id string) (ledger.Inventory, ledger.Usage, bool) {
	n := l.t.State.Node(id)
	if n == nil {
		return ledger.Inventory{}, ledger.Usage{}, false
	}
	return n.Inventory(), n.Usage, true
}

// Pool implements ledger.Store; a scope's caps and usage are its row's.
func (l txLedger) Pool(name string) (ledger.PoolCaps, ledger.PoolUsage) {
	if ledger.IsScope(name) {
		if row := l.t.CapScopeRow(name); row != nil {
			return row.Caps, row.Usage
		}
		return ledger.PoolCaps{}, ledger.PoolUsage{}
	}
	p := l.t.State.Pool(name)
	if p == nil {
		return ledger.PoolCaps{}, ledger.PoolUsage{}
	}
	return p.Caps, p.Usage
}

// SetUsage implements ledger.Store.
func (l txLedger) SetUsage(node string, used ledger.Usage) {
	n := l.t.State.Node(node)
	if n == nil {
		return
	}
	cp := *n
	cp.Usage = used
	l.t.putNode(&cp)
}

// PoolScopes implements ledger.Store: the pool's cap group, then the
// cluster. A pool that is gone counts against the cluster only.
func (l txLedger) PoolScopes(pool string) []string {
	if p := l.t.State.Pool(pool); p != nil {
		return ledger.ScopesOf(p.CapGroup)
	}
	return ledger.ScopesOf("")
}

// SetPoolUsage implements ledger.Store.
func (l txLedger) SetPoolUsage(pool string, used ledger.PoolUsage) {
	if ledger.IsScope(pool) {
		l.t.setScopeUsage(pool, used)
		return
	}
	p := l.t.State.Pool(pool)
	if p == nil {
		return
	}
	cp := *p
	cp.Usage = used
	l.t.putPool(&cp)
}

// PutReservation implements ledger.Store. A bundle's reservation is its
// placed job, which the caller writes with the bundle (reservations.go);
// only node services' reservations are rows.
func (l txLedger) PutReservation(r ledger.Reservation) {
	if isServiceKey(r.Key) {
		l.t.insert(tableReservations, &reservationRow{ID: r.Key.String(), BundleID: r.Key.Bundle, NodeID: r.Node, Reservation: r})
	}
}

// DeleteReservation implements ledger.Store; see PutReservation.
func (l txLedger) DeleteReservation(k ledger.Key) {
	if !isServiceKey(k) {
		return
	}
	if row := first[reservationRow](l.t.txn, tableReservations, "id", k.String()); row != nil {
		l.t.delete(tableReservations, row)
	}
}

// Reservation implements ledger.Store.
func (l txLedger) Reservation(k ledger.Key) (ledger.Reservation, bool) {
	return l.t.State.Reservation(k)
}
