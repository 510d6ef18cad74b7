package leader

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestPlacementProperty: after any sequence of creates, deletes, node
// changes and passes of the placing duties (placer, failover, drainer,
// deleter), no node is over-committed, and no plan a duty computed on the
// state it then applied to had a part the FSM rejected: the FSM re-checks
// plans, but a leader alone should never need it to.
func TestPlacementProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := &placementModel{e: newEnv(rt)}
		m.e.pool(fsm.Pool{Name: "p", Scoring: rapid.SampledFrom([]string{fsm.ScoringBinpack, fsm.ScoringSpread}).Draw(rt, "scoring")})
		m.p, m.f = &placer{l: m.e.l}, &failover{l: m.e.l}
		m.d, m.x = &drainer{l: m.e.l}, &deleter{l: m.e.l}
		rt.Repeat(map[string]func(*rapid.T){
			"node":     m.addNode,
			"status":   m.setStatus,
			"flag":     m.setFlag,
			"create":   m.create,
			"delete":   m.delete,
			"placer":   func(*rapid.T) { m.p.pass(m.e.ctx) },
			"failover": func(*rapid.T) { m.f.pass(m.e.ctx) },
			"drainer":  func(*rapid.T) { m.d.pass(m.e.ctx) },
			"deleter":  func(*rapid.T) { m.e.clock.Advance(30 * time.Second); m.x.pass(m.e.ctx) },
			"settle":   m.settle,
			"":         m.check,
		})
	})
}

// placementModel is the cluster the property drives: nodes and bundles by
// number, and the duties, which keep their leader-local state across steps.
type placementModel struct {
	e       *env
	p       *placer
	f       *failover
	d       *drainer
	x       *deleter
	nodes   int
	bundles int
}

func (m *placementModel) addNode(t *rapid.T) {
	id := fmt.Sprintf("n%d", m.nodes)
	m.nodes++
	m.e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: id, Pool: "p", TotalCapacity: rapid.SampledFrom([]int64{1000, 2000, 4000}).Draw(t, "capacity"),
		TotalCores: rapid.IntRange(1, 4).Draw(t, "cores"),
		Labels:     map[string]string{"az": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "az")},
	}, Now: m.e.now()})
	m.e.setStatus(id, fsm.NodeReady)
}

func (m *placementModel) node(t *rapid.T) string {
	if m.nodes == 0 {
		t.Skip("no node yet")
	}
	return fmt.Sprintf("n%d", rapid.IntRange(0, m.nodes-1).Draw(t, "node"))
}

func (m *placementModel) setStatus(t *rapid.T) {
	id := m.node(t)
	status := rapid.SampledFrom([]string{fsm.NodeReady, fsm.NodeSuspect, fsm.NodeDown, fsm.NodeLeft}).Draw(t, "status")
	m.e.setStatus(id, status)
}

func (m *placementModel) setFlag(t *rapid.T) {
	typ := rapid.SampledFrom([]fsm.MessageType{fsm.NodeCordonType, fsm.NodeDrainType}).Draw(t, "flag")
	m.e.store.ok(typ, &fsm.NodeFlagRequest{NodeID: m.node(t), On: rapid.Bool().Draw(t, "on"), Now: m.e.now()})
}

func (m *placementModel) create(t *rapid.T) {
	s := fsm.BundleSpec{
		ID: fmt.Sprintf("b%d", m.bundles), Pool: "p",
		Priority: rapid.SampledFrom([]string{fsm.PriorityGold, fsm.PrioritySilver, fsm.PriorityBronze}).Draw(t, "priority"),
	}
	m.bundles++
	for i := range rapid.IntRange(1, 3).Draw(t, "jobs") {
		s.Jobs = append(s.Jobs, fsm.Job{Name: fmt.Sprintf("j%d", i), Requirements: ledger.Request{
			Capacity: rapid.SampledFrom([]int64{250, 500, 1000, 2000}).Draw(t, "jobCapacity"),
			Cores:    rapid.IntRange(0, 2).Draw(t, "jobCores"),
		}})
	}
	if len(s.Jobs) > 1 && rapid.Bool().Draw(t, "separate") {
		s.Jobs[0].SeparateFrom = []string{s.Jobs[1].Name}
	}
	if rapid.Bool().Draw(t, "resilient") {
		s.Resilience = &fsm.Resilience{
			SameNode: fsm.Forbid, SameAz: rapid.SampledFrom([]string{fsm.Allow, fsm.Forbid}).Draw(t, "sameAz"),
		}
	}
	m.e.create(s)
	m.e.clock.Advance(time.Second)
}

func (m *placementModel) delete(t *rapid.T) {
	if m.bundles == 0 {
		t.Skip("no bundle yet")
	}
	id := fmt.Sprintf("b%d", rapid.IntRange(0, m.bundles-1).Draw(t, "bundle"))
	if m.e.store.State().Bundle(id) == nil {
		t.Skip("already gone")
	}
	m.e.store.ok(fsm.DeleteBundleType, &fsm.DeleteBundleRequest{ID: id, Now: m.e.now()})
}

// settle runs the placer as its loop would while nothing else happens,
// then asks the same placer with its memory of what it last read wiped
// (it reads every unplaceable bundle) for one more pass: that pass must
// find nothing to do. The read every unplaceableRescan is only a safety
// net: nothing may wait for it.
func (m *placementModel) settle(t *rapid.T) {
	for range 10 {
		m.e.clock.Advance(recordCoalesce)
		m.p.pass(m.e.ctx)
	}
	m.e.store.take()
	probe := *m.p
	probe.scannedAt, probe.scannedChange, probe.rescan = time.Time{}, 0, false
	probe.unchanged = unchangedTries{}
	// Past recordCoalesce, so a plan of records the probe finds commits
	// rather than being held (a held plan commits nothing and would pass).
	m.e.clock.Advance(recordCoalesce)
	if n := probe.pass(m.e.ctx); n != 0 {
		t.Fatalf("a placer that read every unplaceable bundle committed %d parts the settled one left: %v", n, typesOf(m.e.store.take()))
	}
}

// check: nodes within their inventory, jobs kept apart as their bundle
// says, and no part of any plan rejected.
func (m *placementModel) check(t *rapid.T) {
	st := m.e.store.State()
	for _, n := range st.Nodes("") {
		if err := ledger.Fits(n.Inventory(), n.Usage); err != nil {
			t.Fatalf("node %s over-committed: %v", n.ID, err)
		}
	}
	for _, b := range st.Bundles("", "") {
		checkApart(t, b)
	}
	for _, p := range m.e.store.take() {
		if p.typ != fsm.ApplyPlanType {
			continue
		}
		if p.res == nil || p.res.Err != nil {
			t.Fatalf("plan failed: %v %v", p.err, p.res)
		}
		if r := p.res.Value.(*fsm.PlanResult); len(r.Rejected) > 0 {
			t.Fatalf("plan parts rejected on the state they were computed on: %+v", r.Rejected)
		}
	}
}

// checkApart fails when two jobs of one replica that must be apart
// (separateFrom) share a node.
func checkApart(t *rapid.T, b *fsm.Bundle) {
	for _, r := range b.Replicas {
		at := map[string]string{}
		for _, j := range r.Jobs {
			at[j.Name] = j.NodeID
		}
		for _, j := range b.Spec.Jobs {
			for _, other := range j.SeparateFrom {
				if at[j.Name] != "" && at[j.Name] == at[other] {
					t.Fatalf("bundle %s slot %d: %s and %s both on %s", b.ID(), r.Slot, j.Name, other, at[j.Name])
				}
			}
		}
	}
}
