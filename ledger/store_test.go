package ledger

import (
	"errors"
	"reflect"
	"testing"
)

func newTestStore() *MemStore {
	s := NewMemStore()
	s.AddNode("n1", testInventory())
	s.AddNode("n2", Inventory{Allocatable: 1000, TotalCores: 2})
	s.SetPoolCaps("capped", PoolCaps{MaxCapacity: 1500, MaxCores: 3})
	return s
}

func res(job, node, pool string, g Grant) Reservation {
	return Reservation{Key: Key{Bundle: "b", Replica: 0, Job: job}, Node: node, Pool: pool, Grant: g}
}

func TestReserve(t *testing.T) {
	g := Grant{Capacity: 1000, Cores: []int{0, 1}}
	tests := []struct {
		name  string
		setup []Reservation
		r     Reservation
		is    error
		dim   string
	}{
		{name: "ok", r: res("a", "n1", "p", g)},
		{name: "idempotent", setup: []Reservation{res("a", "n1", "p", g)}, r: res("a", "n1", "p", g.Clone())},
		{name: "idempotent reordered", setup: []Reservation{res("a", "n1", "p", g)},
			r: res("a", "n1", "p", Grant{Capacity: 1000, Cores: []int{1, 0}})},
		{name: "conflict grant", setup: []Reservation{res("a", "n1", "p", g)},
			r: res("a", "n1", "p", Grant{Capacity: 1000, Cores: []int{2, 3}}), is: ErrConflict},
		{name: "conflict node", setup: []Reservation{res("a", "n1", "p", g)},
			r: res("a", "n2", "p", g), is: ErrConflict},
		{name: "conflict pool", setup: []Reservation{res("a", "n1", "p", g)},
			r: res("a", "n1", "q", g), is: ErrConflict},
		{name: "unknown node", r: res("a", "n9", "p", g), is: ErrUnknownNode},
		{name: "invalid grant", r: res("a", "n2", "p", Grant{Cores: []int{2}}), is: ErrInvalidGrant},
		{name: "node exhausted", setup: []Reservation{res("a", "n1", "p", g)},
			r: res("b", "n1", "p", Grant{Cores: []int{1}}), is: ErrExhausted, dim: "cores"},
		{name: "pool capacity", setup: []Reservation{res("a", "n1", "capped", g)},
			r: res("b", "n1", "capped", Grant{Capacity: 501}), is: ErrExhausted, dim: "poolCaps"},
		{name: "pool cores", setup: []Reservation{res("a", "n1", "capped", g)},
			r: res("b", "n2", "capped", Grant{Cores: []int{0, 1}}), is: ErrExhausted, dim: "poolCaps"},
		{name: "pool fits", setup: []Reservation{res("a", "n1", "capped", g)},
			r: res("b", "n2", "capped", Grant{Capacity: 500, Cores: []int{0}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore()
			for _, r := range tc.setup {
				if err := Reserve(s, r); err != nil {
					t.Fatalf("setup: %v", err)
				}
			}
			before := s.Clone()
			err := Reserve(s, tc.r)
			if tc.is == nil {
				if err != nil {
					t.Fatalf("Reserve = %v", err)
				}
				checkInvariants(t, s)
				return
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("Reserve = %v, want %v", err, tc.is)
			}
			if tc.dim != "" {
				wantErr(t, err, tc.dim)
			}
			if !reflect.DeepEqual(s, before) {
				t.Fatal("failed Reserve changed the store")
			}
		})
	}
}

func TestReserveStoresCopy(t *testing.T) {
	s := newTestStore()
	r := res("a", "n1", "p", Grant{Cores: []int{0, 1}})
	if err := Reserve(s, r); err != nil {
		t.Fatal(err)
	}
	r.Grant.Cores[0] = 5
	if got, _ := s.Reservation(r.Key); got.Grant.Cores[0] != 0 {
		t.Fatal("store aliases the caller's grant")
	}
}

func TestRelease(t *testing.T) {
	s := newTestStore()
	empty := s.Clone()
	r := res("a", "n1", "capped", Grant{Capacity: 700, Cores: []int{2}, ExclusiveGPUs: []int{1},
		Capabilities: []CapabilityCount{{Name: "nic", Count: 2}}})
	if err := Reserve(s, r); err != nil {
		t.Fatal(err)
	}
	if Release(s, Key{Bundle: "b", Job: "zzz"}) {
		t.Fatal("released an absent key")
	}
	if !Release(s, r.Key) {
		t.Fatal("Release = false for a held key")
	}
	if !reflect.DeepEqual(s, empty) {
		t.Fatalf("Release did not restore the store")
	}
	if Release(s, r.Key) {
		t.Fatal("second Release = true")
	}
}

func TestReleaseNodeGone(t *testing.T) {
	s := newTestStore()
	r := res("a", "n2", "capped", Grant{Capacity: 700, Cores: []int{1}})
	if err := Reserve(s, r); err != nil {
		t.Fatal(err)
	}
	s.RemoveNode("n2")
	if !Release(s, r.Key) {
		t.Fatal("Release = false")
	}
	if _, ok := s.Reservation(r.Key); ok {
		t.Fatal("reservation still present")
	}
	if _, used := s.Pool("capped"); used != (PoolUsage{}) {
		t.Fatalf("pool usage = %+v, want zero", used)
	}
	if _, _, ok := s.Node("n2"); ok {
		t.Fatal("Release resurrected the node")
	}
}

func TestMemStoreAddNodeKeepsUsage(t *testing.T) {
	s := newTestStore()
	if err := Reserve(s, res("a", "n2", "p", Grant{Capacity: 10})); err != nil {
		t.Fatal(err)
	}
	s.AddNode("n2", Inventory{Allocatable: 20, TotalCores: 1})
	inv, used, _ := s.Node("n2")
	if inv.Allocatable != 20 || used.Capacity != 10 {
		t.Fatalf("inv=%+v used=%+v", inv, used)
	}
	if got := s.Pools(); !reflect.DeepEqual(got, []string{"capped", "p"}) {
		t.Fatalf("Pools() = %v", got)
	}
	if got := s.Nodes(); !reflect.DeepEqual(got, []string{"n1", "n2"}) {
		t.Fatalf("Nodes() = %v", got)
	}
}

func TestOverlay(t *testing.T) {
	base := newTestStore()
	held := res("held", "n1", "p", Grant{Capacity: 500, Cores: []int{0}})
	if err := Reserve(base, held); err != nil {
		t.Fatal(err)
	}
	before := base.Clone()

	o := NewOverlay(base)
	if !Release(o, held.Key) {
		t.Fatal("overlay Release = false")
	}
	if _, ok := o.Reservation(held.Key); ok {
		t.Fatal("tombstoned reservation visible through overlay")
	}
	// The released core is free again in the overlay only.
	if err := Reserve(o, res("new", "n1", "p", Grant{Capacity: 4000, Cores: []int{0}})); err != nil {
		t.Fatalf("overlay Reserve = %v", err)
	}
	if !reflect.DeepEqual(base, before) {
		t.Fatal("overlay wrote through to base before Commit")
	}
	if err := Reserve(o, res("more", "n1", "p", Grant{Capacity: 1})); !errors.Is(err, ErrExhausted) {
		t.Fatalf("overlay did not account its own reserve: %v", err)
	}

	want := before.Clone()
	Release(want, held.Key)
	if err := Reserve(want, res("new", "n1", "p", Grant{Capacity: 4000, Cores: []int{0}})); err != nil {
		t.Fatal(err)
	}
	o.Commit()
	if !reflect.DeepEqual(base, want) {
		t.Fatal("Commit result differs from direct application")
	}
	// After Commit the overlay is empty and reads the new base.
	if _, ok := o.Reservation(Key{Bundle: "b", Job: "new"}); !ok {
		t.Fatal("overlay lost committed reservation")
	}
	o.Commit()
	if !reflect.DeepEqual(base, want) {
		t.Fatal("second Commit changed the base")
	}
	// Later writes to the base show through a committed overlay.
	Release(base, Key{Bundle: "b", Job: "new"})
	if _, ok := o.Reservation(Key{Bundle: "b", Job: "new"}); ok {
		t.Fatal("overlay kept a stale reservation after Commit")
	}
	if _, used, _ := o.Node("n1"); used.Capacity != 0 {
		t.Fatalf("overlay kept stale usage after Commit: %+v", used)
	}
}

func TestOverlayUnknownNode(t *testing.T) {
	o := NewOverlay(newTestStore())
	o.SetUsage("ghost", Usage{Capacity: 1})
	if _, _, ok := o.Node("ghost"); ok {
		t.Fatal("overlay invented a node")
	}
	if caps, _ := o.Pool("capped"); caps.MaxCores != 3 {
		t.Fatalf("caps not read through: %+v", caps)
	}
}
