package ledger

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// world is the state of a ledger property test: a MemStore with a few random
// nodes and capped pools. Node "ghost" is never added.
type world struct {
	s     *MemStore
	nodes []string
	pools []string
}

func newWorld(t *rapid.T) *world {
	w := &world{s: NewMemStore(), pools: []string{"p0", "p1", "p2"}}
	for i := range 4 - rapid.IntRange(0, 3).Draw(t, "nodes") {
		id := fmt.Sprintf("n%d", i)
		w.s.AddNode(id, genInventory(t, id))
		w.nodes = append(w.nodes, id)
	}
	for _, p := range w.pools {
		w.s.SetPoolCaps(p, genCaps(t))
		w.s.SetPoolGroup(p, rapid.SampledFrom([]string{"", "", "g0", "g1"}).Draw(t, "group"))
	}
	// Aggregate caps: often none, sometimes below the sum of the pools'.
	if rapid.Bool().Draw(t, "clusterCapped") {
		w.s.SetPoolCaps(ClusterScope, genScopeCaps(t))
	}
	for _, g := range []string{"g0", "g1"} {
		if rapid.Bool().Draw(t, "groupCapped") {
			w.s.SetPoolCaps(GroupScope(g), genScopeCaps(t))
		}
	}
	return w
}

func genScopeCaps(t *rapid.T) PoolCaps {
	return PoolCaps{
		MaxCapacity: rapid.Int64Range(0, 60).Draw(t, "scope.maxcap") * 100,
		MaxCores:    rapid.IntRange(0, 24).Draw(t, "scope.maxcores"),
	}
}

// regroup moves a pool to another cap group when the group's caps hold
// the pool's usage (the FSM refuses the move otherwise).
func (w *world) regroup(t *rapid.T) {
	p := rapid.SampledFrom(w.pools).Draw(t, "regroupPool")
	g := rapid.SampledFrom([]string{"", "g0", "g1"}).Draw(t, "regroupTo")
	if g != "" && g != w.s.PoolGroup(p) {
		caps, used := w.s.Pool(GroupScope(g))
		_, add := w.s.Pool(p)
		sum := used.Plus(add)
		if (caps.MaxCapacity > 0 && sum.Capacity > caps.MaxCapacity) || (caps.MaxCores > 0 && sum.Cores > caps.MaxCores) {
			t.Skip("the group's caps would not hold the pool")
		}
	}
	w.s.SetPoolGroup(p, g)
	checkInvariants(t, w.s)
}

// Where a drawn reservation's grant comes from.
const (
	fromFit      = iota // Fit on the node's current usage
	fromCollide         // a Fit grant plus something another reservation holds
	fromHandmade        // genGrant: often malformed
)

// drawReservation builds a reservation against s with a grant from source.
// Keys come from a small set, so many draws re-use an existing key.
func (w *world) drawReservation(t *rapid.T, s *MemStore, source int) Reservation {
	r := Reservation{
		Key:  genKey(t),
		Node: rapid.SampledFrom(w.nodes).Draw(t, "node"),
		Pool: rapid.SampledFrom(w.pools).Draw(t, "pool"),
	}
	if rapid.IntRange(0, 9).Draw(t, "ghost") == 9 {
		r.Node = "ghost"
	}
	inv, used, _ := s.Node(r.Node)
	if source == fromHandmade {
		r.Grant = genGrant(t)
		return r
	}
	g, err := Fit(inv, used, genRequest(t))
	if err != nil && !errors.Is(err, ErrExhausted) && !errors.Is(err, ErrInvalidGrant) {
		t.Fatalf("Fit returned an unclassified error: %v", err)
	}
	if err == nil {
		if cerr := Check(inv, used, g); cerr != nil {
			t.Fatalf("Check rejects Fit's grant %+v: %v", g, cerr)
		}
	}
	r.Grant = g
	if source == fromCollide {
		r.Grant = collide(t, s, r.Node, g)
	}
	return r
}

// collide adds to g something a reservation on node already holds, so that
// Check has to notice the double booking.
func collide(t *rapid.T, s *MemStore, node string, g Grant) Grant {
	var victims []Reservation
	for _, r := range s.Reservations() {
		if r.Node == node {
			victims = append(victims, r)
		}
	}
	if len(victims) == 0 {
		return g
	}
	v := rapid.SampledFrom(victims).Draw(t, "victim").Grant
	var gpus []int
	if v.GPU != nil {
		gpus = append(gpus, v.GPU.Index)
	}
	gpus = append(gpus, v.ExclusiveGPUs...)
	switch rapid.IntRange(0, 5).Draw(t, "collision") {
	case 0:
		if len(v.Cores) > 0 {
			g.Cores = append(slices.Clone(g.Cores), rapid.SampledFrom(v.Cores).Draw(t, "stolenCore"))
		}
	case 1:
		if len(gpus) > 0 {
			g.GPU, g.ExclusiveGPUs = nil, []int{rapid.SampledFrom(gpus).Draw(t, "stolenGPU")}
		}
	case 2:
		if len(gpus) > 0 {
			g.ExclusiveGPUs = nil
			g.GPU = &GPUShare{Index: rapid.SampledFrom(gpus).Draw(t, "sharedGPU"), Capacity: 100}
		}
	case 3:
		g.Capabilities = slices.Clone(v.Capabilities)
	case 4: // a grant that names one of its own cores twice
		if len(g.Cores) > 0 {
			g.Cores = append(slices.Clone(g.Cores), g.Cores[0])
		}
	case 5: // memory the victim already holds, on top of what fit
		g.MemoryMiB += v.MemoryMiB
	}
	return g
}

// canonical sorts a grant's lists and drops empty ones, giving the test an
// equality that does not depend on GrantEqual.
func canonical(g Grant) Grant {
	g = g.Clone()
	slices.Sort(g.Cores)
	slices.Sort(g.ExclusiveGPUs)
	slices.SortFunc(g.Capabilities, func(a, b CapabilityCount) int {
		if a.Name != b.Name {
			return strings.Compare(a.Name, b.Name)
		}
		return int(a.Count - b.Count)
	})
	if len(g.Cores) == 0 {
		g.Cores = nil
	}
	if len(g.ExclusiveGPUs) == 0 {
		g.ExclusiveGPUs = nil
	}
	if len(g.Capabilities) == 0 {
		g.Capabilities = nil
	}
	return g
}

// scopeOracle predicts whether the cluster and cap group caps take r, from
// the reservations alone.
func scopeOracle(s *MemStore, r Reservation) bool {
	for _, sc := range s.PoolScopes(r.Pool) {
		want := PoolUsage{}.Add(r.Grant)
		for _, o := range s.Reservations() {
			if slices.Contains(s.PoolScopes(o.Pool), sc) {
				want = want.Add(o.Grant)
			}
		}
		caps, _ := s.Pool(sc)
		if (caps.MaxCapacity > 0 && want.Capacity > caps.MaxCapacity) || (caps.MaxCores > 0 && want.Cores > caps.MaxCores) {
			return false
		}
	}
	return true
}

// reserveOracle predicts Reserve's outcome from the grants alone.
func reserveOracle(s *MemStore, r Reservation) (nodeOK, poolOK bool) {
	inv, _, _ := s.Node(r.Node)
	grants := []Grant{r.Grant}
	want := PoolUsage{}.Add(r.Grant)
	for _, o := range s.Reservations() {
		if o.Node == r.Node {
			grants = append(grants, o.Grant)
		}
		if o.Pool == r.Pool {
			want = want.Add(o.Grant)
		}
	}
	caps, _ := s.Pool(r.Pool)
	poolOK = (caps.MaxCapacity == 0 || want.Capacity <= caps.MaxCapacity) &&
		(caps.MaxCores == 0 || want.Cores <= caps.MaxCores) &&
		(caps.MaxMemoryMiB == 0 || want.MemoryMiB <= caps.MaxMemoryMiB)
	return grantsViolation(inv, grants) == "", poolOK
}

func isCapDim(d string) bool { return d == DimPoolCaps || d == DimClusterCaps || d == DimGroupCaps }

// reserve applies Reserve and checks it against the oracle, idempotence,
// no-change-on-failure and release-restores-state.
func (w *world) reserve(t *rapid.T, r Reservation) {
	s := w.s
	before := s.Clone()
	old, exists := s.Reservation(r.Key)
	_, _, known := s.Node(r.Node)
	nodeOK, poolOK := reserveOracle(s, r)
	scopeOK := scopeOracle(s, r)
	err := Reserve(s, r)
	switch {
	case exists:
		same := old.Node == r.Node && old.Pool == r.Pool && reflect.DeepEqual(canonical(old.Grant), canonical(r.Grant))
		if (same && err != nil) || (!same && !errors.Is(err, ErrConflict)) {
			t.Fatalf("Reserve of existing key (same=%v) = %v", same, err)
		}
	case !known:
		if !errors.Is(err, ErrUnknownNode) {
			t.Fatalf("Reserve on unknown node = %v", err)
		}
	case !nodeOK:
		var ex *ExhaustedError
		if err == nil || (!errors.Is(err, ErrInvalidGrant) && !errors.As(err, &ex)) || (ex != nil && isCapDim(ex.Dimension)) {
			t.Fatalf("Reserve of a grant the node cannot hold = %v (%+v)", err, r.Grant)
		}
	case !poolOK:
		var ex *ExhaustedError
		if !errors.As(err, &ex) || ex.Dimension != DimPoolCaps {
			t.Fatalf("Reserve over pool caps = %v", err)
		}
	case !scopeOK:
		var ex *ExhaustedError
		if !errors.As(err, &ex) || (ex.Dimension != DimClusterCaps && ex.Dimension != DimGroupCaps) {
			t.Fatalf("Reserve over cluster or group caps = %v", err)
		}
	case err != nil:
		t.Fatalf("Reserve of a fitting grant = %v", err)
	}
	if err != nil || exists {
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("Reserve (err=%v, existed=%v) changed the store", err, exists)
		}
		return
	}
	twice := s.Clone()
	if err := Reserve(twice, r); err != nil || !reflect.DeepEqual(twice, s) {
		t.Fatalf("second Reserve = %v or changed the store", err)
	}
	undo := s.Clone()
	if !Release(undo, r.Key) || !reflect.DeepEqual(undo, before) {
		t.Fatal("Reserve then Release does not restore the previous state")
	}
}

func (w *world) release(t *rapid.T, k Key) {
	before := w.s.Clone()
	_, exists := w.s.Reservation(k)
	if got := Release(w.s, k); got != exists {
		t.Fatalf("Release(%s) = %v, held %v", k, got, exists)
	}
	if !exists && !reflect.DeepEqual(w.s, before) {
		t.Fatal("Release of an absent key changed the store")
	}
	want := slices.DeleteFunc(before.Reservations(), func(r Reservation) bool { return r.Key == k })
	if got := w.s.Reservations(); len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("Release(%s) touched other reservations", k)
	}
}

func (w *world) existing(t *rapid.T) (Reservation, bool) {
	all := w.s.Reservations()
	if len(all) == 0 {
		return Reservation{}, false
	}
	return rapid.SampledFrom(all).Draw(t, "existing"), true
}

// rereserve reserves an existing key again, either with the same resources
// (listed in another order) or with one thing changed.
func (w *world) rereserve(t *rapid.T) {
	r, ok := w.existing(t)
	if !ok {
		t.Skip("nothing reserved")
	}
	r = r.Clone()
	switch rapid.IntRange(0, 7).Draw(t, "change") {
	case 0:
		slices.Reverse(r.Grant.Cores)
	case 1:
		r.Grant.Capacity++
	case 2:
		r.Node = rapid.SampledFrom(w.nodes).Draw(t, "othernode")
	case 3:
		r.Pool = rapid.SampledFrom(w.pools).Draw(t, "otherpool")
	case 4: // same number of cores, one of them different
		if len(r.Grant.Cores) == 0 {
			r.Grant.Cores = []int{0}
		} else {
			r.Grant.Cores[0] += 1000
		}
	case 5:
		share := GPUShare{Index: 0, Capacity: 100}
		if r.Grant.GPU != nil {
			share = *r.Grant.GPU
			share.Capacity += 100
		}
		r.Grant.GPU = &share
	case 6:
		r.Grant.Capabilities = append(r.Grant.Capabilities, CapabilityCount{Name: "nic", Count: 1})
	case 7:
		r.Grant.MemoryMiB += 256
	}
	w.reserve(t, r)
}

// resize replaces a node's inventory when Fits allows it, checking Fits
// against the grant-level oracle.
func (w *world) resize(t *rapid.T) {
	id := rapid.SampledFrom(w.nodes).Draw(t, "resize")
	_, used, ok := w.s.Node(id)
	if !ok {
		t.Skip("node removed")
	}
	inv := genInventory(t, id)
	var grants []Grant
	for _, r := range w.s.Reservations() {
		if r.Node == id {
			grants = append(grants, r.Grant)
		}
	}
	err := Fits(inv, used)
	if (err == nil) != (grantsViolation(inv, grants) == "") {
		t.Fatalf("Fits = %v disagrees with the grants", err)
	}
	if err == nil {
		w.s.AddNode(id, inv)
	}
}

func TestLedgerInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t)
		// rapid samples action names with a lean towards the first in sort
		// order, so "fit" (the one that builds up state) sorts first.
		actions := map[string]func(*rapid.T){
			"fit":        func(t *rapid.T) { w.reserve(t, w.drawReservation(t, w.s, fromFit)) },
			"fitCollide": func(t *rapid.T) { w.reserve(t, w.drawReservation(t, w.s, fromCollide)) },
			"handmade":   func(t *rapid.T) { w.reserve(t, w.drawReservation(t, w.s, fromHandmade)) },
			"release": func(t *rapid.T) {
				if r, ok := w.existing(t); ok && rapid.Bool().Draw(t, "held") {
					w.release(t, r.Key)
					return
				}
				w.release(t, genKey(t))
			},
			"removeNode": func(t *rapid.T) {
				if len(w.s.Nodes()) < 2 || rapid.IntRange(0, 4).Draw(t, "removeRoll") != 4 {
					t.Skip("keep nodes most of the time")
				}
				w.s.RemoveNode(rapid.SampledFrom(w.s.Nodes()).Draw(t, "remove"))
			},
			"rereserve": w.rereserve,
			"regroup":   w.regroup,
			"resize":    w.resize,
			"":          func(t *rapid.T) { checkInvariants(t, w.s) },
		}
		// Several rounds make sequences long enough to fill nodes and pools.
		for range 4 {
			t.Repeat(actions)
		}
	})
}

// ledgerOp is one Reserve or Release, replayable on any Store.
type ledgerOp struct {
	release bool
	r       Reservation
}

func (op ledgerOp) apply(s Store) string {
	if op.release {
		return fmt.Sprint("release ", Release(s, op.r.Key))
	}
	if err := Reserve(s, op.r); err != nil {
		return err.Error()
	}
	return "reserved"
}

func TestOverlayMatchesDirect(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t)
		for range rapid.IntRange(0, 8).Draw(t, "warmup") {
			ledgerOp{r: w.drawReservation(t, w.s, fromFit)}.apply(w.s)
		}
		direct := w.s.Clone()
		base := w.s.Clone()
		outer := NewOverlay(base)
		var inner *Overlay
		top := outer
		if rapid.Bool().Draw(t, "nested") {
			inner = NewOverlay(outer)
			top = inner
		}
		for range rapid.IntRange(1, 25).Draw(t, "ops") {
			op := ledgerOp{release: rapid.IntRange(0, 3).Draw(t, "kind") == 0}
			op.r = w.drawReservation(t, direct, rapid.IntRange(fromFit, fromHandmade).Draw(t, "source"))
			got, want := op.apply(top), op.apply(direct)
			if got != want {
				t.Fatalf("overlay: %q, direct: %q", got, want)
			}
			gr, gok := top.Reservation(op.r.Key)
			wr, wok := direct.Reservation(op.r.Key)
			if gok != wok || !reflect.DeepEqual(gr, wr) {
				t.Fatalf("reservation %s differs: %+v vs %+v", op.r.Key, gr, wr)
			}
			_, gu, _ := top.Node(op.r.Node)
			_, wu, _ := direct.Node(op.r.Node)
			if !reflect.DeepEqual(gu, wu) {
				t.Fatalf("node %s usage differs", op.r.Node)
			}
		}
		if !reflect.DeepEqual(base, w.s) {
			t.Fatal("overlay wrote to base before Commit")
		}
		if inner != nil {
			inner.Commit()
		}
		outer.Commit()
		if !reflect.DeepEqual(base, direct) {
			t.Fatalf("committed store differs from direct application\n got %+v\nwant %+v", base.Reservations(), direct.Reservations())
		}
		checkInvariants(t, base)
	})
}
