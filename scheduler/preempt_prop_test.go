package scheduler

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestPropertyPreemption draws small clusters (≤ 5 nodes, the generator of
// TestPropertyPlacement) filled with silver and bronze bundles placed by the
// engine, then a gold or silver bundle that Place cannot fit, and runs
// Preempt. Whenever it evicts:
//   - the plan commits whole on a real FSM, the ledger invariants hold, the
//     preemptor's primary is placed and keeps every hard rule;
//   - every victim is in a strictly lower band, each bundle loses at most
//     one replica, and each victim update releases exactly its replica;
//   - the victim set is minimal, by brute force independent of the engine:
//     without any one victim no placement of the preemptor exists;
//   - the same input and seed give the identical plan.
//
// When it does not evict, nothing is added to the plan.
func TestPropertyPreemption(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkPreemption(t, genPreemptWorld(t)) })
}

// TestPropertyPreemptionManyVictims: the same properties on clusters of
// plain capacity and cores packed with small bundles, where making room
// usually takes several victims, so the bisection, the pruning and the
// reverse pass all have work to do.
func TestPropertyPreemptionManyVictims(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkPreemption(t, genPackedWorld(t)) })
}

func checkPreemption(t *rapid.T, c *cluster) {
	before := c.state()
	seed := rapid.Uint64().Draw(t, "seed")
	plan, res, tried := preemptFresh(before, seed)
	if !tried {
		return
	}
	plan2, res2, _ := preemptFresh(before, seed)
	if !reflect.DeepEqual(plan, plan2) || !reflect.DeepEqual(res, res2) {
		t.Fatalf("same input and seed gave different plans")
	}
	if len(res.Victims) == 0 {
		if res.Update != nil && len(res.Update.Place) == 0 {
			t.Fatalf("no victims but an update %+v", res.Update)
		}
		return // nothing to evict, or room without evicting (placed as Place)
	}
	pre := before.Bundle("pre")
	checkVictimRules(t, before, pre, plan, res)
	checkMinimal(t, before, pre, res.Victims)
	c.commit(plan)
	after := c.state()
	checkInvariants(t, after)
	got := after.Bundle("pre")
	if !got.Replicas[0].Complete() {
		t.Fatalf("preemptor primary not placed after commit: %+v", got.Replicas[0])
	}
	checkHardRules(t, after, got)
}

// genPackedWorld: 1..4 nodes of 4..12 units in two AZs, packed with
// silver and bronze bundles of one or two small jobs (some resilient), and
// a gold or silver bundle of one or two bigger jobs.
func genPackedWorld(t *rapid.T) *cluster {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i := 1; i <= rapid.IntRange(1, 4).Draw(t, "nodes"); i++ {
		c.node(mkNode(fmt.Sprintf("n%d", i), "p", rapid.SampledFrom([]string{"a", "b"}).Draw(t, "az"), "x",
			int64(rapid.IntRange(4, 12).Draw(t, "cap"))*1000, rapid.IntRange(0, 4).Draw(t, "cores")))
	}
	small := func(id string, lo, hi int) fsm.BundleSpec {
		spec := fsm.BundleSpec{ID: id, Pool: "p"}
		for k := range rapid.IntRange(1, 2).Draw(t, "jobs") {
			j := mkJob(fmt.Sprintf("j%d", k), int64(rapid.IntRange(lo, hi).Draw(t, "jobCap"))*1000, rapid.IntRange(0, 1).Draw(t, "jobCores"))
			if k > 0 && rapid.Bool().Draw(t, "apart") {
				j.SeparateFrom = []string{"j0"}
			}
			spec.Jobs = append(spec.Jobs, j)
		}
		if rapid.IntRange(0, 2).Draw(t, "resilient") == 0 {
			spec.Resilience = &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Allow, SameCloud: fsm.Allow}
		}
		return spec
	}
	for i := range rapid.IntRange(3, 12).Draw(t, "residents") {
		spec := small(fmt.Sprintf("r%02d", i), 1, 3)
		spec.Priority = rapid.SampledFrom([]string{fsm.PrioritySilver, fsm.PriorityBronze}).Draw(t, "band")
		plan, _ := PlaceBatch(c.state(), []*fsm.Bundle{c.bundle(spec)}, uint64(i), 1)
		c.commit(plan)
	}
	spec := small("pre", 2, 10)
	spec.Priority = rapid.SampledFrom([]string{fsm.PriorityGold, fsm.PrioritySilver}).Draw(t, "preBand")
	c.bundle(spec)
	return c
}

func genPreemptWorld(t *rapid.T) *cluster {
	c := newCluster(t)
	pool := fsm.Pool{Name: "p", Scoring: rapid.SampledFrom([]string{"binpack", "spread"}).Draw(t, "scoring")}
	if rapid.IntRange(0, 4).Draw(t, "caps") == 0 {
		pool.Caps = ledger.PoolCaps{MaxCapacity: int64(rapid.IntRange(6, 30).Draw(t, "maxCap")) * 1000}
	}
	c.pool(pool)
	for i := 1; i <= rapid.IntRange(1, 5).Draw(t, "nodes"); i++ {
		c.node(genNode(t, fmt.Sprintf("n%d", i)))
	}
	var placed []fsm.BundleSpec
	for i := range rapid.IntRange(2, 10).Draw(t, "residents") {
		spec := genSpec(t, c, fmt.Sprintf("r%d", i))
		spec.Priority = rapid.SampledFrom([]string{fsm.PrioritySilver, fsm.PriorityBronze}).Draw(t, "band")
		drawJobBands(t, &spec)
		b := c.bundle(spec)
		plan, res := PlaceBatch(c.state(), []*fsm.Bundle{b}, uint64(i), 1)
		c.commit(plan)
		if res[0].PrimaryPlaced {
			placed = append(placed, spec)
		}
	}
	// Half the time the preemptor is a copy of a placed resident: it is then
	// known to fit somewhere, so a full cluster is a reason to evict rather
	// than a spec no node could ever hold.
	spec := genSpec(t, c, "pre")
	if len(placed) > 0 && rapid.Bool().Draw(t, "copy") {
		spec = cloneSpec(placed[rapid.IntRange(0, len(placed)-1).Draw(t, "copyOf")])
		spec.ID = "pre"
		if rapid.Bool().Draw(t, "bigger") { // more likely to need several victims
			for i := range spec.Jobs {
				spec.Jobs[i].Requirements.Capacity *= 2
			}
		}
	}
	spec.Priority = rapid.SampledFrom([]string{fsm.PriorityGold, fsm.PrioritySilver}).Draw(t, "preBand")
	drawJobBands(t, &spec)
	c.bundle(spec)
	return c
}

// drawJobBands gives some jobs a band of their own, which can lift the
// bundle's effective band above its own.
func drawJobBands(t *rapid.T, spec *fsm.BundleSpec) {
	for i := range spec.Jobs {
		spec.Jobs[i].Priority = rapid.SampledFrom([]string{"", "", "", fsm.PriorityGold, fsm.PrioritySilver, fsm.PriorityBronze}).Draw(t, "jobBand")
	}
}

// preemptFresh is the leader's sequence on a fresh batch: Place, then
// Preempt when the primary stayed unplaced (tried reports that).
func preemptFresh(st *fsm.State, seed uint64) (*fsm.Plan, Result, bool) {
	batch := NewEngine(Options{}).Snapshot(st).NewBatch(seed)
	b := st.Bundle("pre")
	if r := batch.Place(b); r.PrimaryPlaced {
		return nil, Result{}, false
	}
	res := batch.Preempt(b)
	return batch.Plan(1), res, true
}

func checkVictimRules(t *rapid.T, st *fsm.State, pre *fsm.Bundle, plan *fsm.Plan, res Result) {
	part := plan.Parts[len(plan.Parts)-1]
	if len(part.Updates) != len(res.Victims)+1 {
		t.Fatalf("part has %d updates for %d victims", len(part.Updates), len(res.Victims))
	}
	lost := map[string]int{}
	for i, v := range res.Victims {
		vb := st.Bundle(v.BundleID)
		u := part.Updates[i]
		if vb.Spec.EffectiveBand() <= pre.Spec.EffectiveBand() {
			t.Fatalf("victim %s is %s, preemptor %s", v.BundleID, vb.Spec.EffectivePriority(), pre.Spec.EffectivePriority())
		}
		if u.BundleID != v.BundleID || u.Preemptor != pre.ID() || u.Promote != v.Promoted {
			t.Fatalf("victim update %+v for %+v", u, v)
		}
		for _, r := range u.Release {
			if r.Slot != v.Slot {
				t.Fatalf("victim %s releases slot %d, evicted slot %d", v.BundleID, r.Slot, v.Slot)
			}
		}
		lost[v.BundleID]++
	}
	for id, n := range lost {
		if n > 1 {
			t.Fatalf("bundle %s loses %d replicas", id, n)
		}
	}
}

// checkMinimal asks the brute-force oracle, on the state with the victims'
// reservations released, whether the preemptor fits with all of them gone
// (it must) and with any one of them kept (it must not).
func checkMinimal(t *rapid.T, st *fsm.State, pre *fsm.Bundle, victims []Victim) {
	fits := func(skip int) bool {
		o := newOracle(st, &pre.Spec, 0, pre.Spec.Placement.SameAz == fsm.SameAzHard, nil)
		for i, v := range victims {
			if i == skip {
				continue
			}
			for _, h := range v.held {
				r, _ := st.Reservation(h.Key)
				o.usage[r.Node] = o.usage[r.Node].Sub(r.Grant)
				if r.Pool == o.pool.Name {
					o.poolUsed = o.poolUsed.Sub(r.Grant)
				}
			}
		}
		ok, _ := o.feasible()
		return ok
	}
	if !fits(-1) {
		t.Fatalf("brute force finds no placement with every victim evicted: %+v", victims)
	}
	for i, v := range victims {
		if fits(i) {
			t.Fatalf("victim %s/%d is not needed: the set %+v is not minimal", v.BundleID, v.Slot, victims)
		}
	}
}
