package ledger

import "fmt"

// Store is the storage the accounting functions work on. The FSM implements
// it over the state store's write transaction; MemStore implements it over maps for tests
// and Overlay buffers writes for the scheduler's what-if plans.
//
// Values passed in and out are treated as immutable by this package.
type Store interface {
	// Node returns a node's inventory and usage; ok is false if unknown.
	Node(id string) (inv Inventory, used Usage, ok bool)
	// Pool returns a pool's caps and usage; an unknown pool has zero caps
	// (no limits) and zero usage.
	Pool(name string) (caps PoolCaps, used PoolUsage)
	// PoolScopes lists the aggregate scopes (scope.go) a pool's
	// reservations also count against, narrowest first; Pool and
	// SetPoolUsage take their names.
	PoolScopes(pool string) []string
	Reservation(k Key) (Reservation, bool)
	SetUsage(node string, used Usage)
	SetPoolUsage(pool string, used PoolUsage)
	PutReservation(r Reservation)
	DeleteReservation(k Key)
}

// Reserve records r, keeping every invariant of DESIGN §2.4.
//
// It is idempotent: if a reservation with r's key already exists with the
// same node, pool and an equal grant (GrantEqual) it returns nil; if anything
// differs it returns an ErrConflict-wrapping error. Otherwise it returns
// ErrUnknownNode, a Check error, a CheckPool error or a CheckScope error
// (cluster or cap group caps), or applies the
// reservation to node usage, pool usage and the reservation table. All checks
// run before the first write, so on any error the store is unchanged.
func Reserve(s Store, r Reservation) error {
	if old, ok := s.Reservation(r.Key); ok {
		if old.Node == r.Node && old.Pool == r.Pool && GrantEqual(old.Grant, r.Grant) {
			return nil
		}
		return fmt.Errorf("%w: %s is already held on node %q in pool %q", ErrConflict, r.Key, old.Node, old.Pool)
	}
	inv, used, ok := s.Node(r.Node)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNode, r.Node)
	}
	if err := Check(inv, used, r.Grant); err != nil {
		return err
	}
	caps, pool := s.Pool(r.Pool)
	if err := CheckPool(caps, pool, r.Grant); err != nil {
		return err
	}
	if err := checkScopes(s, r.Pool, r.Grant); err != nil {
		return err
	}
	s.SetUsage(r.Node, used.Add(r.Grant))
	s.SetPoolUsage(r.Pool, pool.Add(r.Grant))
	addScopes(s, r.Pool, r.Grant, false)
	s.PutReservation(r.Clone())
	return nil
}

// Release removes the reservation with key k and gives its resources back to
// its node, pool and the pool's scopes. It reports whether there was anything to release;
// releasing an absent key changes nothing. A reservation whose node is gone
// is still deleted and its pool usage returned, so nothing squats capacity
// after its owner is gone.
func Release(s Store, k Key) bool {
	r, ok := s.Reservation(k)
	if !ok {
		return false
	}
	if _, used, ok := s.Node(r.Node); ok {
		s.SetUsage(r.Node, used.Sub(r.Grant))
	}
	_, pool := s.Pool(r.Pool)
	s.SetPoolUsage(r.Pool, pool.Sub(r.Grant))
	addScopes(s, r.Pool, r.Grant, true)
	s.DeleteReservation(k)
	return true
}
