package fsm

import (
	"slices"
	"strings"

	"github.com/amserver/amserver/ledger"
)

// A bundle's reservations are not stored: every placed job holds exactly
// one (DESIGN §2.4), with the job's node and grant and its replica slot's
// pool, so the bundle row is the ledger's record of them. Storing them again
// cost two index entries per placed job on every plan, restore and
// snapshot, and about a tenth of the state's memory. Only node services'
// reservations, which no bundle describes, have rows of their own; the
// bundles table's "node" index finds a node's placed bundles.

// isServiceKey reports whether k is a node service's reservation ("~" never
// starts a bundle id).
func isServiceKey(k ledger.Key) bool { return strings.HasPrefix(k.Bundle, "~") }

// heldReservation is the reservation a bundle's placed job holds.
func heldReservation(b *Bundle, k ledger.Key) (ledger.Reservation, bool) {
	j := b.slotJob(k.Replica, k.Job)
	if j == nil || !j.Placed() {
		return ledger.Reservation{}, false
	}
	return ledger.Reservation{Key: k, Node: j.NodeID, Pool: b.Spec.SlotPool(k.Replica), Grant: j.Grant}, true
}

// appendHeld appends the reservations of b's jobs placed on node (every
// placed job when node is "").
func appendHeld(out []ledger.Reservation, b *Bundle, node string) []ledger.Reservation {
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Placed() && (node == "" || j.NodeID == node) {
				k := ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: j.Name}
				out = append(out, ledger.Reservation{Key: k, Node: j.NodeID, Pool: b.Spec.SlotPool(r.Slot), Grant: j.Grant})
			}
		}
	}
	return out
}

// sortByKeyString orders reservations as the key strings sort, the order a
// table keyed by them lists them in.
func sortByKeyString(rs []ledger.Reservation) {
	keys := make(map[ledger.Key]string, len(rs))
	for _, r := range rs {
		keys[r.Key] = r.Key.String()
	}
	slices.SortFunc(rs, func(a, b ledger.Reservation) int { return strings.Compare(keys[a.Key], keys[b.Key]) })
}

// Reservation returns the reservation with key k.
func (s *State) Reservation(k ledger.Key) (ledger.Reservation, bool) {
	if isServiceKey(k) {
		row := first[reservationRow](s.txn, tableReservations, "id", k.String())
		if row == nil {
			return ledger.Reservation{}, false
		}
		return row.Reservation, true
	}
	b := s.Bundle(k.Bundle)
	if b == nil {
		return ledger.Reservation{}, false
	}
	return heldReservation(b, k)
}

// NodeReservations returns the reservations held on a node, sorted by key.
func (s *State) NodeReservations(node string) []ledger.Reservation {
	out := reservations(all[reservationRow](s.txn, tableReservations, "node", node))
	for _, b := range all[Bundle](s.txn, tableBundles, "node", node) {
		out = appendHeld(out, b, node)
	}
	sortByKeyString(out)
	return out
}

// Reservations returns every reservation sorted by key.
func (s *State) Reservations() []ledger.Reservation {
	out := reservations(all[reservationRow](s.txn, tableReservations, "id"))
	for _, b := range all[Bundle](s.txn, tableBundles, "id") {
		out = appendHeld(out, b, "")
	}
	sortByKeyString(out)
	return out
}

func reservations(rows []*reservationRow) []ledger.Reservation {
	out := make([]ledger.Reservation, len(rows))
	for i, r := range rows {
		out[i] = r.Reservation
	}
	return out
}

// bundleNodes is the bundle's entries in the "node" index: each node its
// placed jobs hold, sorted and distinct.
func bundleNodes(b *Bundle) []string {
	var nodes []string
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Placed() && !slices.Contains(nodes, j.NodeID) {
				nodes = append(nodes, j.NodeID)
			}
		}
	}
	slices.Sort(nodes)
	return nodes
}
