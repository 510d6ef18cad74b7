package leader

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

// TestPlacerPlacesPending: one pass places a pending bundle in one plan.
func TestPlacerPlacesPending(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 4000, 4, fsm.NodeReady)
	e.bundle("b", "p", "", 1000, 1000)
	p := &placer{l: e.l}
	if got := p.pass(e.ctx); got != 1 {
		t.Fatalf("pass committed %d parts, want 1", got)
	}
	if b := e.get("b"); b.State != fsm.StatePlaced || e.nodesOf("b", 0)["a"] != "n1" {
		t.Fatalf("bundle %s on %v, want placed on n1", b.State, e.nodesOf("b", 0))
	}
	ps := e.store.take()
	if len(ps) != 1 || ps[0].typ != fsm.ApplyPlanType || ps[0].body.(*fsm.Plan).Now != e.now() {
		t.Fatalf("proposed %v, want one plan stamped with the leader's clock", typesOf(ps))
	}
	if p.pass(e.ctx) != 0 || len(e.store.take()) != 0 {
		t.Fatal("a second pass with nothing to place proposed something")
	}
}

// TestPlacerQueueOrder: gold, silver, bronze, then submission time, then
// id (DESIGN §3.6); unplaceable bundles only when asked for.
func TestPlacerQueueOrder(t *testing.T) {
	tests := []struct {
		name    string
		created []string // id:priority, in submission order
		want    []string
	}{
		{"bands", []string{"b1:bronze", "s1:silver", "g1:gold"}, []string{"g1", "s1", "b1"}},
		{"age within a band", []string{"g2:gold", "g1:gold", "s1:"}, []string{"g2", "g1", "s1"}},
		{"default is silver", []string{"b:bronze", "d:", "s:silver"}, []string{"d", "s", "b"}},
		// id:bundle band/job band: a gold job lifts a bronze bundle.
		{"a job's band lifts its bundle", []string{"s1:silver", "x:bronze/gold", "b1:bronze"}, []string{"x", "s1", "b1"}},
		{"a job's lower band changes nothing", []string{"g1:gold/bronze", "s1:silver"}, []string{"g1", "s1"}},
		{"an unset bundle takes its job's band", []string{"s1:silver", "y:/bronze"}, []string{"s1", "y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			for _, c := range tc.created {
				id, prio, _ := strings.Cut(c, ":")
				prio, jobPrio, _ := strings.Cut(prio, "/")
				s := spec(id, "p", prio, 100)
				s.Jobs[0].Priority = jobPrio
				e.create(s)
				e.clock.Advance(time.Second)
			}
			var got []string
			for _, b := range placementQueue(e.store.State(), false) {
				got = append(got, b.ID())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("queue %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPlacerPlacesByBand: with room for one bundle, the gold one gets it
// even though it came last, and its part is first in the plan.
func TestPlacerPlacesByBand(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	for _, c := range []string{"b:bronze", "s:silver", "g:gold"} {
		id, prio, _ := strings.Cut(c, ":")
		e.bundle(id, "p", prio, 1000)
		e.clock.Advance(time.Second)
	}
	(&placer{l: e.l}).pass(e.ctx)
	for id, want := range map[string]string{"g": fsm.StatePlaced, "s": fsm.StateUnplaceable, "b": fsm.StateUnplaceable} {
		if got := e.get(id).State; got != want {
			t.Errorf("bundle %s is %s, want %s", id, got, want)
		}
	}
	plan := e.store.take()[0].body.(*fsm.Plan)
	if first := plan.Parts[0].Updates[0].BundleID; first != "g" {
		t.Fatalf("first plan part is for %s, want g", first)
	}
}

// TestPlacerBatches: a burst is placed over several entries of at most
// maxBundlesPerPlan parts each, oldest first.
func TestPlacerBatches(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 100_000, 4, fsm.NodeReady)
	total := maxBundlesPerPlan + 3
	for i := range total {
		e.bundle(fmt.Sprintf("b%04d", i), "p", "", 10)
	}
	p := &placer{l: e.l}
	for _, want := range []int{maxBundlesPerPlan, 3, 0} {
		if got := p.pass(e.ctx); got != want {
			t.Fatalf("pass committed %d parts, want %d", got, want)
		}
	}
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
	if n := len(e.store.State().BundlesInState(fsm.StatePlaced)); n != total {
		t.Fatalf("%d bundles placed, want %d", n, total)
	}
}

// TestPlacerLeavesUnplaceableAlone: a bundle that does not fit is tried
// once per cluster (AttemptIndex), however much time passes, and again
// when a node joins.
func TestPlacerLeavesUnplaceableAlone(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	e.bundle("big", "p", "", 2000)
	p := &placer{l: e.l}
	p.pass(e.ctx)
	if b := e.get("big"); b.State != fsm.StateUnplaceable || b.AttemptIndex == 0 {
		t.Fatalf("bundle %s attempt %d, want unplaceable with its attempt recorded", b.State, b.AttemptIndex)
	}
	e.store.take()
	for range 3 {
		e.clock.Advance(time.Minute)
		p.pass(e.ctx)
	}
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("proposed %v for a cluster that did not change", typesOf(ps))
	}
	e.bundle("other", "p", "", 500) // a create is not a cluster change
	p.pass(e.ctx)
	if e.get("big").State != fsm.StateUnplaceable || e.get("other").State != fsm.StatePlaced {
		t.Fatal("the new bundle should be placed and the big one left alone")
	}
	e.node("n2", "p", 4000, 4, fsm.NodeReady)
	p.pass(e.ctx)
	if b := e.get("big"); b.State != fsm.StatePlaced || e.nodesOf("big", 0)["a"] != "n2" {
		t.Fatalf("after a node joined: %s on %v, want placed on n2", b.State, e.nodesOf("big", 0))
	}
}

// TestPlacerCoalescesFailureRecords: a plan that only records why bundles
// do not fit commits at most once per recordCoalesce; a held record waits
// for the next one (or for a plan that places something) and is not lost.
func TestPlacerCoalescesFailureRecords(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	p := &placer{l: e.l}
	e.bundle("big1", "p", "", 2000)
	if p.pass(e.ctx); e.get("big1").State != fsm.StateUnplaceable {
		t.Fatalf("first record held: big1 %s", e.get("big1").State)
	}
	e.bundle("big2", "p", "", 2000)
	e.store.take()
	p.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 0 || e.get("big2").State != fsm.StatePending {
		t.Fatalf("a second record within %v proposed %v (big2 %s)", recordCoalesce, typesOf(ps), e.get("big2").State)
	}
	if p.recordDue <= 0 || p.recordDue > recordCoalesce {
		t.Fatalf("held record due in %v, want within (0, %v]", p.recordDue, recordCoalesce)
	}
	e.bundle("small", "p", "", 500) // a plan that places carries the held record along
	p.pass(e.ctx)
	if e.get("small").State != fsm.StatePlaced || e.get("big2").State != fsm.StateUnplaceable {
		t.Fatalf("placing plan: small %s, big2 %s", e.get("small").State, e.get("big2").State)
	}
	e.bundle("big3", "p", "", 2000)
	p.pass(e.ctx)
	if e.get("big3").State != fsm.StatePending {
		t.Fatalf("big3 %s, want held", e.get("big3").State)
	}
	e.clock.Advance(recordCoalesce)
	p.pass(e.ctx)
	if e.get("big3").State != fsm.StateUnplaceable {
		t.Fatalf("big3 %s after the interval, want its record committed", e.get("big3").State)
	}
}

// TestPlacerBackups: a missing backup is placed, and a backup that breaks
// its forbid is moved (make-before-break), once a second node is there.
func TestPlacerBackups(t *testing.T) {
	tests := []struct {
		name     string
		capacity int64 // of the one job; n1 holds 4000
		degraded string
	}{
		{"missing backup", 3000, fsm.DegradeNoBackup},
		{"backup on the primary's node", 1000, fsm.DegradeBackupSameNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			s := spec("b", "p", "", tc.capacity)
			s.Resilience = &fsm.Resilience{SameNode: fsm.Forbid}
			e.create(s)
			p := &placer{l: e.l}
			p.pass(e.ctx)
			if b := e.get("b"); b.State != fsm.StateDegraded || !b.HasDegradation(tc.degraded) {
				t.Fatalf("one node: %s %+v, want degraded with %s", b.State, b.Degradations, tc.degraded)
			}
			e.node("n2", "p", 4000, 4, fsm.NodeReady)
			p.pass(e.ctx)
			b := e.get("b")
			if b.State != fsm.StatePlaced || e.nodesOf("b", 0)["a"] != "n1" || e.nodesOf("b", 1)["a"] != "n2" {
				t.Fatalf("two nodes: %s, primary %v backup %v, want placed on n1 and n2",
					b.State, e.nodesOf("b", 0), e.nodesOf("b", 1))
			}
		})
	}
}

// TestPlacerPreemptionBudget: gold bundles evict bronze ones, at most
// preemptPerPass searches a pass; the rest wait for the next pass.
func TestPlacerPreemptionBudget(t *testing.T) {
	e := newEnv(t)
	n := preemptPerPass + 1
	for i := range n {
		node, victim := fmt.Sprintf("n%02d", i), fmt.Sprintf("bronze%02d", i)
		e.node(node, "p", 1000, 4, fsm.NodeReady)
		e.bundle(victim, "p", fsm.PriorityBronze, 1000)
		e.place(victim, 0, node)
	}
	for i := range n {
		e.bundle(fmt.Sprintf("gold%02d", i), "p", fsm.PriorityGold, 1000)
		e.clock.Advance(time.Millisecond)
	}
	p := &placer{l: e.l}
	p.pass(e.ctx)
	if got := countStates(e, "gold"); got[fsm.StatePlaced] != preemptPerPass || got[fsm.StateUnplaceable] != 1 {
		t.Fatalf("after one pass gold bundles are %v, want %d placed and 1 unplaceable", got, preemptPerPass)
	}
	if got := countStates(e, "bronze"); got[fsm.StatePlaced] != 1 {
		t.Fatalf("after one pass bronze bundles are %v, want 1 still placed", got)
	}
	p.pass(e.ctx) // the evictions changed the cluster: the last gold is tried again
	if got := countStates(e, "gold"); got[fsm.StatePlaced] != n {
		t.Fatalf("after two passes gold bundles are %v, want all %d placed", got, n)
	}
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
}

// countStates counts the states of the bundles whose id starts with prefix.
func countStates(e *env, prefix string) map[string]int {
	out := map[string]int{}
	for _, b := range e.store.State().Bundles("", "") {
		if strings.HasPrefix(b.ID(), prefix) {
			out[b.State]++
		}
	}
	return out
}

// TestPlacerPreemptRetry: a gold bundle whose search found no victims is
// not searched again before preemptRetry on the leader's clock, even
// though the cluster changed in between; after it, it is searched again
// and evicts, whether or not the cluster changes again.
func TestPlacerPreemptRetry(t *testing.T) {
	for _, change := range []bool{true, false} {
		t.Run(fmt.Sprintf("change after the pause %t", change), func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			e.bundle("peer", "p", fsm.PriorityGold, 2000)
			e.place("peer", 0, "n1")
			e.bundle("g", "p", fsm.PriorityGold, 3500)
			p := &placer{l: e.l}
			p.pass(e.ctx) // searched: a gold peer is no victim
			e.bundle("x", "p", fsm.PriorityBronze, 1000)
			p.pass(e.ctx)
			if e.get("g").State != fsm.StateUnplaceable || e.get("x").State != fsm.StatePlaced {
				t.Fatalf("g %s, x %s: want g unplaceable and x placed", e.get("g").State, e.get("x").State)
			}
			deleteAndPurge(e, "peer") // 3000 free now: g fits only by evicting x
			e.clock.Advance(preemptRetry / 2)
			tried := e.get("g").AttemptIndex
			p.pass(e.ctx)
			if g := e.get("g"); g.State != fsm.StateUnplaceable || g.AttemptIndex == tried || e.get("x").State != fsm.StatePlaced {
				t.Fatalf("within preemptRetry: g %s (attempt %d, was %d), x %s; want g tried without evicting",
					g.State, g.AttemptIndex, tried, e.get("x").State)
			}
			e.clock.Advance(preemptRetry / 2)
			if change {
				e.node("n2", "q", 100, 1, fsm.NodeReady)
			}
			p.pass(e.ctx)
			if e.get("g").State != fsm.StatePlaced || e.get("x").State == fsm.StatePlaced {
				t.Fatalf("after preemptRetry: g %s, x %s; want x evicted for g", e.get("g").State, e.get("x").State)
			}
		})
	}
}

func deleteAndPurge(e *env, id string) {
	e.t.Helper()
	e.store.ok(fsm.DeleteBundleType, &fsm.DeleteBundleRequest{ID: id, Now: e.now()})
	e.store.ok(fsm.PurgeBundleType, &fsm.PurgeBundleRequest{ID: id, Now: e.now()})
}

// TestPlacerSkipsBundlesEvictedInBatch: a degraded bundle whose backup a
// gold bundle evicts earlier in the same batch is not healed from its
// stale object in that batch (the FSM would reject the part: the backup
// it moves is no longer placed); it is looked at again next pass.
func TestPlacerSkipsBundlesEvictedInBatch(t *testing.T) {
	e := newEnv(t)
	e.node("n0", "p", 2000, 1, fsm.NodeReady)
	s := spec("victim", "p", fsm.PrioritySilver, 1000)
	s.Resilience = &fsm.Resilience{SameNode: fsm.Forbid}
	e.create(s)
	p := &placer{l: e.l}
	p.pass(e.ctx)
	if v := e.get("victim"); !v.HasDegradation(fsm.DegradeBackupSameNode) {
		t.Fatalf("victim %s %+v, want its backup beside its primary", v.State, v.Degradations)
	}
	g := spec("gold", "p", fsm.PriorityGold, 250, 250)
	g.Jobs[0].SeparateFrom = []string{"b"} // needs n0 as well as the new node
	e.create(g)
	e.node("n1", "p", 2000, 1, fsm.NodeReady) // room to heal the victim, too
	p.pass(e.ctx)
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
	if e.get("gold").State != fsm.StatePlaced {
		t.Fatalf("gold is %s, want placed", e.get("gold").State)
	}
	p.pass(e.ctx)
	if v := e.get("victim"); v.State != fsm.StatePlaced {
		t.Fatalf("victim %s %+v after the next pass, want its backup placed again", v.State, v.Degradations)
	}
}

// TestPlacerSkipsHeldRecordsUntilTheyCanChange: while failure records are
// held, a pass does not place again the bundles that failed against the
// same cluster in the same version; a cluster change, a new version or the
// end of the hold brings them back.
func TestPlacerSkipsHeldRecordsUntilTheyCanChange(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	p := &placer{l: e.l}
	e.bundle("big1", "p", "", 2000)
	p.pass(e.ctx) // the first record commits
	e.bundle("big2", "p", "", 2000)
	p.pass(e.ctx) // big2's record is held
	split := func() (rest, held []string) {
		st := e.store.State()
		r, h := p.splitHeld(placementQueue(st, false), clusterIndex(st), e.clock.Now())
		return bundleIDs(r), bundleIDs(h)
	}
	if rest, held := split(); len(rest) != 0 || !slices.Equal(held, []string{"big2"}) {
		t.Fatalf("within the hold: rest %v, held %v; want big2 held", rest, held)
	}
	e.bundle("big3", "p", "", 2000)
	if rest, held := split(); !slices.Equal(rest, []string{"big3"}) || !slices.Equal(held, []string{"big2"}) {
		t.Fatalf("a new bundle: rest %v, held %v; want big3 placed, big2 held", rest, held)
	}
	e.node("n2", "p", 500, 4, fsm.NodeReady)
	if rest, held := split(); len(rest) != 2 || len(held) != 0 {
		t.Fatalf("after a cluster change: rest %v, held %v; want both placed again", rest, held)
	}
	p.pass(e.ctx) // both fail against the new cluster: held again
	if rest, _ := split(); len(rest) != 0 {
		t.Fatalf("held again: rest %v", rest)
	}
	e.clock.Advance(recordCoalesce)
	if rest, held := split(); len(rest) != 2 || len(held) != 0 {
		t.Fatalf("after the hold: rest %v, held %v; want both placed again", rest, held)
	}
	p.pass(e.ctx)
	if e.get("big2").State != fsm.StateUnplaceable || e.get("big3").State != fsm.StateUnplaceable {
		t.Fatalf("after the hold: big2 %s, big3 %s; want both recorded", e.get("big2").State, e.get("big3").State)
	}
}
