package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// threeNodes is a pool p of n1 (az a), n2 (az b), n3 (az c), all 8 units.
func threeNodes(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i, az := range []string{"a", "b", "c"} {
		c.node(mkNode(fmt.Sprintf("n%d", i+1), "p", az, "x", 8000, 4))
	}
	return c
}

func TestGangForbidAndRemovedAreHonouredAndExplained(t *testing.T) {
	c := threeNodes(t)
	spec := &fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{mkJob("a", 1000, 0)}}
	snap := NewEngine(Options{}).Snapshot(c.state())
	store := snap.NewBatch(1).Store()

	res := snap.PlaceGang(store, Gang{Spec: spec, Forbid: Forbid{Nodes: []string{"n1"}, AZs: []string{"b"}}}, 1)
	if !res.Placed || res.Nodes["a"] != "n3" {
		t.Fatalf("want n3, got %+v", res)
	}
	res = snap.PlaceGang(store, Gang{Spec: spec, Forbid: Forbid{Clouds: []string{"x"}}}, 1)
	if res.Placed || res.Explain.Filtered[StageAntiAffinity] != 3 || res.Explain.NearestMiss.Stage != StageAntiAffinity {
		t.Fatalf("want antiAffinity 3, got %+v %s", res, explainString(res.Explain))
	}
	res = snap.PlaceGang(store, Gang{Spec: spec, Removed: []string{"n1", "n2"}, Forbid: Forbid{Nodes: []string{"n3"}}}, 1)
	want := map[string]int{StagePlaceable: 2, StageAntiAffinity: 1}
	if res.Placed || !jsonEqual(res.Explain.Filtered, want) {
		t.Fatalf("want %v, got %+v %s", want, res, explainString(res.Explain))
	}
	res = snap.PlaceGang(store, Gang{Spec: spec, Removed: []string{"n1", "n3"}}, 1)
	if !res.Placed || res.Nodes["a"] != "n2" {
		t.Fatalf("removed nodes must not be chosen: %+v", res)
	}
}

// TestGangHypotheticalRelease: a release in the batch's overlay makes room
// for a placement, as preemption will use it.
func TestGangHypotheticalRelease(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	c.node(mkNode("n1", "p", "a", "x", 8000, 0))
	c.bundle(fsm.BundleSpec{ID: "old", Pool: "p", Jobs: []fsm.Job{mkJob("a", 6000, 0)}})
	c.placeAt("old", 0, map[string]string{"a": "n1"})
	spec := &fsm.BundleSpec{ID: "new", Pool: "p", Jobs: []fsm.Job{mkJob("a", 4000, 0)}}
	batch := NewEngine(Options{}).Snapshot(c.state()).NewBatch(1)
	if res := batch.snap.PlaceGang(batch.Store(), Gang{Spec: spec}, 1); res.Placed {
		t.Fatal("must not fit before the release")
	}
	ledger.Release(batch.Store(), ledger.Key{Bundle: "old", Replica: 0, Job: "a"})
	if res := batch.snap.PlaceGang(batch.Store(), Gang{Spec: spec}, 1); !res.Placed {
		t.Fatalf("must fit after the release: %s", explainString(res.Explain))
	}
}

// TestGangBudgetBoundsTheSearch: twelve pairwise-separated jobs on eleven
// nodes is a pigeonhole the backtracking cannot refute quickly; the budget
// stops it and the result says so, with the explanation so far.
func TestGangBudgetBoundsTheSearch(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i := range 11 {
		c.node(mkNode(fmt.Sprintf("n%02d", i), "p", "a", "x", 64000, 0))
	}
	spec := &fsm.BundleSpec{ID: "b", Pool: "p"}
	for i := range 12 {
		j := mkJob(fmt.Sprintf("j%02d", i), 1000, 0)
		for k := range i {
			j.SeparateFrom = append(j.SeparateFrom, fmt.Sprintf("j%02d", k))
		}
		spec.Jobs = append(spec.Jobs, j)
	}
	snap := NewEngine(Options{SearchBudget: 20_000}).Snapshot(c.state())
	start := time.Now()
	res := snap.PlaceGang(snap.NewBatch(1).Store(), Gang{Spec: spec}, 1)
	if res.Placed || !res.BudgetExhausted || res.Explain == nil {
		t.Fatalf("want an exhausted, explained failure, got %+v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("budgeted search took %v", d)
	}
	if res.Explain.Filtered[StageSeparateFrom] == 0 {
		t.Fatalf("explanation should show separateFrom: %s", explainString(res.Explain))
	}
}

// TestGangPinnedGroupStaysPut: a partly placed group keeps its node even
// when another node would score better.
func TestGangPinnedGroupStaysPut(t *testing.T) {
	c := threeNodes(t)
	spec := &fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{
		mkJob("a", 1000, 0), {Name: "b", Requirements: ledger.Request{Capacity: 1000}, CoLocateWith: []string{"a"}},
	}}
	snap := NewEngine(Options{}).Snapshot(c.state())
	for _, node := range []string{"n1", "n2", "n3"} {
		res := snap.PlaceGang(snap.NewBatch(1).Store(), Gang{Spec: spec, Placed: map[string]string{"a": node}}, 7)
		if !res.Placed || len(res.Places) != 1 || res.Places[0].Node != node || res.Nodes["a"] != node {
			t.Fatalf("pinned to %s, got %+v", node, res)
		}
	}
}

// TestSamplingNeverChangesFeasibility: on clusters big enough to sample
// (up to 80 nodes), the sampled search places a replica exactly when the
// exhaustive one does — the primary, and then, against the sampled
// primary's reservations, the backup under every rung of its ladder — and
// the sampled plan commits and keeps every hard rule.
func TestSamplingNeverChangesFeasibility(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorldN(t, 33, 80)
		st := w.c.state()
		seed := rapid.Uint64().Draw(t, "seed")
		sampled := NewEngine(Options{ExhaustiveBelow: 1, SampleFloor: 2}).Snapshot(st)
		exhaustive := NewEngine(Options{DisableSampling: true}).Snapshot(st)
		batch := sampled.NewBatch(seed)
		spec := &w.bundle.Spec
		primary := Gang{Spec: spec, NoExplain: true}
		a := sampled.PlaceGang(batch.Store(), primary, seed)
		if b := exhaustive.PlaceGang(batch.Store(), primary, seed); a.Placed != b.Placed {
			t.Fatalf("primary: sampled %v, exhaustive %v", a.Placed, b.Placed)
		}
		if a.Placed && spec.Resilience != nil {
			if err := batch.reserve(spec.ID, a.Places); err != nil {
				t.Fatal(err)
			}
			prim := batch.domainsOf(a.Nodes)
			for _, r := range ladder(spec.Resilience) {
				g := Gang{Spec: spec, Slot: 1, NoExplain: true, Forbid: prim.forbid(r)}
				x, y := sampled.PlaceGang(batch.Store(), g, seed), exhaustive.PlaceGang(batch.Store(), g, seed)
				if x.Placed != y.Placed || x.BudgetExhausted || y.BudgetExhausted {
					t.Fatalf("backup rung %+v: sampled %v, exhaustive %v", r, x.Placed, y.Placed)
				}
			}
		}
		whole := sampled.NewBatch(seed)
		whole.Place(w.bundle)
		w.c.commit(whole.Plan(1))
		checkInvariants(t, w.c.state())
		checkHardRules(t, st, w.c.state().Bundle(w.bundle.ID()))
	})
}

func TestIndexCandidatesNarrow(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i := range 12 {
		n := mkNode(fmt.Sprintf("n%02d", i), "p", []string{"a", "b", "c"}[i%3], []string{"x", "y"}[i%2], 8000, 0)
		if i%4 == 0 {
			n.Capabilities = []ledger.Capability{{Name: "nic", Count: 1}}
		}
		c.node(n)
	}
	snap := NewEngine(Options{}).Snapshot(c.state())
	spec := &fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{mkJob("a", 1000, 0)}}
	s := newSearch(snap, newTask(snap, Gang{Spec: spec, Forbid: Forbid{AZs: []string{"a"}, Clouds: []string{"y"}}}), snap.Store(), 1, false, false)
	got := flatten(snap, s.t.pool.tiers[0].candidates(s, s.t.groups[0]))
	if want := []string{"n02", "n04", "n08", "n10"}; !slices.Equal(got, want) {
		t.Fatalf("forbidden domains: got %v, want %v", got, want)
	}
	spec.Jobs[0].Requirements.Capabilities = []ledger.CapabilityRequest{{Name: "nic", Count: 1}}
	s = newSearch(snap, newTask(snap, Gang{Spec: spec}), snap.Store(), 1, false, false)
	got = flatten(snap, s.t.pool.tiers[0].candidates(s, s.t.groups[0]))
	if want := []string{"n00", "n04", "n08"}; !slices.Equal(got, want) {
		t.Fatalf("capability list: got %v, want %v", got, want)
	}
}

func flatten(sn *Snapshot, segs [][]int32) []string {
	var out []string
	for _, l := range segs {
		for _, p := range l {
			out = append(out, sn.idx.nodes[p].node.ID)
		}
	}
	slices.Sort(out)
	return out
}
