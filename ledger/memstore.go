package ledger

import (
	"maps"
	"slices"
)

// MemStore is a map-backed Store. Every listing is sorted, so nothing
// depends on map iteration order. Zero pool usage and zero pool caps are
// not stored, which keeps a store that went through Reserve and Release
// reflect.DeepEqual to the store before.
type MemStore struct {
	nodes        map[string]memNode
	poolCaps     map[string]PoolCaps
	poolUsage    map[string]PoolUsage
	poolGroups   map[string]string // pool -> cap group
	reservations map[Key]Reservation
}

type memNode struct {
	inv  Inventory
	used Usage
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{
		nodes:        map[string]memNode{},
		poolCaps:     map[string]PoolCaps{},
		poolUsage:    map[string]PoolUsage{},
		poolGroups:   map[string]string{},
		reservations: map[Key]Reservation{},
	}
}

// SetPoolGroup puts a pool in a cap group ("" for none). Like the FSM it
// moves the pool's usage from the old group's scope to the new one's.
func (m *MemStore) SetPoolGroup(pool, group string) {
	old := m.poolGroups[pool]
	if old == group {
		return
	}
	used := m.poolUsage[pool]
	if old != "" {
		sc := GroupScope(old)
		m.SetPoolUsage(sc, m.poolUsage[sc].Minus(used))
	}
	if group != "" {
		sc := GroupScope(group)
		m.SetPoolUsage(sc, m.poolUsage[sc].Plus(used))
		m.poolGroups[pool] = group
	} else {
		delete(m.poolGroups, pool)
	}
}

// PoolScopes implements Store.
func (m *MemStore) PoolScopes(pool string) []string { return ScopesOf(m.poolGroups[pool]) }

// PoolGroup returns the pool's cap group, "" for none.
func (m *MemStore) PoolGroup(pool string) string { return m.poolGroups[pool] }

// AddNode registers a node or replaces its inventory, keeping its usage.
// It does not check Fits; callers that must refuse a shrinking inventory do.
func (m *MemStore) AddNode(id string, inv Inventory) {
	n := m.nodes[id]
	n.inv = inv.Clone()
	m.nodes[id] = n
}

// RemoveNode forgets a node; its reservations stay until released.
func (m *MemStore) RemoveNode(id string) { delete(m.nodes, id) }

// SetPoolCaps sets a pool's caps; zero caps mean none.
func (m *MemStore) SetPoolCaps(name string, caps PoolCaps) {
	if caps == (PoolCaps{}) {
		delete(m.poolCaps, name)
		return
	}
	m.poolCaps[name] = caps
}

// Node implements Store.
func (m *MemStore) Node(id string) (Inventory, Usage, bool) {
	n, ok := m.nodes[id]
	return n.inv, n.used, ok
}

// Pool implements Store.
func (m *MemStore) Pool(name string) (PoolCaps, PoolUsage) {
	return m.poolCaps[name], m.poolUsage[name]
}

// Reservation implements Store.
func (m *MemStore) Reservation(k Key) (Reservation, bool) {
	r, ok := m.reservations[k]
	return r, ok
}

// SetUsage implements Store; usage of an unknown node is dropped because
// there is nothing to account it against.
func (m *MemStore) SetUsage(node string, used Usage) {
	n, ok := m.nodes[node]
	if !ok {
		return
	}
	n.used = used
	m.nodes[node] = n
}

// SetPoolUsage implements Store.
func (m *MemStore) SetPoolUsage(pool string, used PoolUsage) {
	if used == (PoolUsage{}) {
		delete(m.poolUsage, pool)
		return
	}
	m.poolUsage[pool] = used
}

// PutReservation implements Store. It keeps r as given; Reserve already
// passes a private copy.
func (m *MemStore) PutReservation(r Reservation) { m.reservations[r.Key] = r }

// DeleteReservation implements Store.
func (m *MemStore) DeleteReservation(k Key) { delete(m.reservations, k) }

// Reservations lists every reservation sorted by key.
func (m *MemStore) Reservations() []Reservation {
	out := slices.Collect(maps.Values(m.reservations))
	slices.SortFunc(out, func(a, b Reservation) int { return a.Key.Compare(b.Key) })
	return out
}

// Nodes lists the node ids in ascending order.
func (m *MemStore) Nodes() []string { return slices.Sorted(maps.Keys(m.nodes)) }

// Pools lists, in ascending order, every pool with caps or usage.
func (m *MemStore) Pools() []string {
	return slices.DeleteFunc(m.named(), IsScope)
}

// Scopes lists, in ascending order, every aggregate scope with caps or
// usage.
func (m *MemStore) Scopes() []string {
	return slices.DeleteFunc(m.named(), func(n string) bool { return !IsScope(n) })
}

func (m *MemStore) named() []string {
	names := slices.Collect(maps.Keys(m.poolCaps))
	names = slices.AppendSeq(names, maps.Keys(m.poolUsage))
	slices.Sort(names)
	return slices.Compact(names)
}

// Clone returns an independent copy. Stored values are immutable, so the
// copy shares them and only the maps are duplicated.
func (m *MemStore) Clone() *MemStore {
	return &MemStore{
		nodes:        maps.Clone(m.nodes),
		poolCaps:     maps.Clone(m.poolCaps),
		poolUsage:    maps.Clone(m.poolUsage),
		poolGroups:   maps.Clone(m.poolGroups),
		reservations: maps.Clone(m.reservations),
	}
}
