package ledger

import (
	"maps"
	"slices"
)

// Overlay is a Store that reads through to a base Store and buffers writes,
// so the scheduler can try a group of reserves and releases (a whole bundle
// replica, a preemption) and then Commit them or simply drop the overlay.
// Inventories and pool caps are always read from the base.
type Overlay struct {
	base         Store
	usage        map[string]Usage
	poolUsage    map[string]PoolUsage
	reservations map[Key]overlayEntry
}

// overlayEntry is a buffered reservation; deleted marks a tombstone so a
// released reservation does not reappear from the base.
type overlayEntry struct {
	r       Reservation
	deleted bool
}

// NewOverlay returns an empty overlay over base.
func NewOverlay(base Store) *Overlay {
	return &Overlay{
		base:         base,
		usage:        map[string]Usage{},
		poolUsage:    map[string]PoolUsage{},
		reservations: map[Key]overlayEntry{},
	}
}

// Node implements Store.
func (o *Overlay) Node(id string) (Inventory, Usage, bool) {
	inv, used, ok := o.base.Node(id)
	if !ok {
		return inv, used, false
	}
	if u, ok := o.usage[id]; ok {
		used = u
	}
	return inv, used, true
}

// Pool implements Store.
func (o *Overlay) Pool(name string) (PoolCaps, PoolUsage) {
	caps, used := o.base.Pool(name)
	if u, ok := o.poolUsage[name]; ok {
		used = u
	}
	return caps, used
}

// PoolScopes implements Store; membership is read from the base.
func (o *Overlay) PoolScopes(pool string) []string { return o.base.PoolScopes(pool) }

// Reservation implements Store.
func (o *Overlay) Reservation(k Key) (Reservation, bool) {
	if e, ok := o.reservations[k]; ok {
		return e.r, !e.deleted
	}
	return o.base.Reservation(k)
}

// SetUsage implements Store.
func (o *Overlay) SetUsage(node string, used Usage) { o.usage[node] = used }

// SetPoolUsage implements Store.
func (o *Overlay) SetPoolUsage(pool string, used PoolUsage) { o.poolUsage[pool] = used }

// PutReservation implements Store; like MemStore it keeps r as given.
func (o *Overlay) PutReservation(r Reservation) { o.reservations[r.Key] = overlayEntry{r: r} }

// DeleteReservation implements Store.
func (o *Overlay) DeleteReservation(k Key) {
	o.reservations[k] = overlayEntry{deleted: true}
}

// Commit applies the buffered writes to the base in sorted order (node
// usage, pool usage, then reservations by key) so that every replica's base
// sees the same sequence of writes, and leaves the overlay empty and reading
// through to the updated base.
func (o *Overlay) Commit() {
	for _, id := range slices.Sorted(maps.Keys(o.usage)) {
		o.base.SetUsage(id, o.usage[id])
	}
	for _, name := range slices.Sorted(maps.Keys(o.poolUsage)) {
		o.base.SetPoolUsage(name, o.poolUsage[name])
	}
	keys := slices.SortedFunc(maps.Keys(o.reservations), Key.Compare)
	for _, k := range keys {
		if e := o.reservations[k]; e.deleted {
			o.base.DeleteReservation(k)
		} else {
			o.base.PutReservation(e.r)
		}
	}
	clear(o.usage)
	clear(o.poolUsage)
	clear(o.reservations)
}
