package scheduler

import (
	"fmt"

	"github.com/amserver/amserver/fsm"
)

// Spread is where a service's replicas are, for placing one more: how many
// other replicas have a job on each node and in each AZ, and the bundle's
// hard bounds (0: none).
type Spread struct {
	NodeCount  map[string]int
	AZCount    map[string]int
	MaxPerNode int
	MaxPerAz   int
}

func (s *Spread) bounded() bool { return s != nil && (s.MaxPerNode > 0 || s.MaxPerAz > 0) }

// newSpread counts every replica of a service bundle.
func (b *Batch) newSpread(bundle *fsm.Bundle) *Spread {
	sp := &Spread{NodeCount: map[string]int{}, AZCount: map[string]int{},
		MaxPerNode: bundle.Spec.MaxPerNode, MaxPerAz: bundle.Spec.MaxPerAz}
	for i := range bundle.Replicas {
		sp.count(b, placedOf(&bundle.Replicas[i]), 1)
	}
	return sp
}

// count adds (delta 1) or removes (-1) one replica on its nodes: a replica
// counts once per node and once per AZ however many of its jobs are there.
func (sp *Spread) count(b *Batch, nodes map[string]string, delta int) {
	seenNode, seenAZ := map[string]bool{}, map[string]bool{}
	for _, id := range nodes { // order-free: counts only
		if seenNode[id] {
			continue
		}
		seenNode[id] = true
		sp.NodeCount[id] += delta
		az := ""
		if n := b.snap.idx.node(id); n != nil {
			az = n.az
		}
		if !seenAZ[az] {
			seenAZ[az] = true
			sp.AZCount[az] += delta
		}
	}
}

// fillService places a service's incomplete replicas, each as a gang, in
// index order, spreading them softly over nodes and AZs within the hard
// maxPerNode / maxPerAz bounds. Every replica that fits is reserved and
// placed; res.Explain says why the first that did not fit did not. After a
// fresh replica (nothing of it placed) fails, the fresh ones after it are not
// searched: they are the same gang and would fail the same way, and a
// service of 10,000 replicas in a full pool must not cost 10,000 searches.
// PrimaryPlaced means every replica is complete.
func (b *Batch) fillService(bundle *fsm.Bundle) (Result, []fsm.Place) {
	res := Result{BundleID: bundle.ID()}
	spec := &bundle.Spec
	seed := b.bundleSeed(bundle)
	sp := b.newSpread(bundle)
	var places []fsm.Place
	missing, freshFailed, spans := 0, false, false
	for i := range bundle.Replicas {
		rep := &bundle.Replicas[i]
		if rep.Complete() {
			spans = spans || (spec.Placement.SameAz == fsm.SameAzSoft && b.spansAZ(placedOf(rep)))
			continue
		}
		placed := placedOf(rep)
		if freshFailed && len(placed) == 0 {
			missing++
			res.Incomplete = append(res.Incomplete, rep.Slot)
			continue
		}
		sp.count(b, placed, -1) // its own jobs do not crowd it
		g := Gang{Spec: spec, Slot: rep.Slot, Placed: placed, Removed: b.removed, Spread: sp, NoExplain: res.Explain != nil}
		r := b.snap.PlaceGang(b.overlay, g, derive(seed, uint64(rep.Slot)))
		res.BudgetExhausted = res.BudgetExhausted || r.BudgetExhausted
		if r.Placed {
			if err := b.reserve(bundle.ID(), r.Places); err != nil {
				r = GangResult{Explain: internalExplain(err), Nodes: placed}
			}
		}
		if !r.Placed {
			sp.count(b, placed, 1)
			missing++
			res.Incomplete = append(res.Incomplete, rep.Slot)
			freshFailed = freshFailed || len(placed) == 0
			if res.Explain == nil {
				res.Explain = r.Explain
			}
			continue
		}
		sp.count(b, r.Nodes, 1)
		spans = spans || r.SpansAZ
		places = append(places, r.Places...)
	}
	res.PrimaryPlaced = missing == 0
	res.JobsPlaced = len(places)
	res.Degradations = serviceDegradations(len(bundle.Replicas), missing, res.Explain)
	if spans && spec.Placement.SameAz == fsm.SameAzSoft {
		res.Degradations = append([]fsm.Degradation{{Code: fsm.DegradeReplicaSpansAz,
			Message: "a replica spans more than one AZ (sameAz soft)"}}, res.Degradations...)
	}
	return res, places
}

func serviceDegradations(count, missing int, ex *fsm.Explain) []fsm.Degradation {
	if missing == 0 {
		return nil
	}
	return []fsm.Degradation{{Code: fsm.DegradeReplicasMissing,
		Message: fmt.Sprintf("%d of %d replicas placed: %s", count-missing, count, Summary(ex))}}
}

// placeService is Place for a service: whatever fits is committed, and
// while replicas are missing the explanation stays on the bundle (so the
// placer retries it after the cluster changes, as it does an unplaceable
// bundle). A service with nothing placed is unplaceable, as a resilient
// bundle without a primary.
func (b *Batch) placeService(bundle *fsm.Bundle) Result {
	res, places := b.fillService(bundle)
	if len(places) == 0 {
		switch {
		case len(bundle.Held()) == 0 && !res.PrimaryPlaced:
			return b.unplaceable(bundle, res, res.Explain)
		case sameCodes(bundle.Degradations, res.Degradations) && (bundle.Explain == nil) == (res.Explain == nil):
			return res // tried before, nothing changed: no churn
		}
	}
	res.Update = &fsm.BundleUpdate{
		BundleID: bundle.ID(), Place: places, SetDegradations: true, Degradations: res.Degradations, Explain: res.Explain,
	}
	b.addPart(res.Update)
	return res
}

// spreadFilter enforces maxPerNode and maxPerAz: a node already holding
// maxPerNode other replicas, or in an AZ holding maxPerAz, is not feasible.
type spreadFilter struct{}

func (spreadFilter) Name() string { return StageMaxPerNode }

func (spreadFilter) Filter(c *cycle) bool {
	sp := c.s.t.spread
	if n := sp.NodeCount[c.n.node.ID]; sp.MaxPerNode > 0 && n >= sp.MaxPerNode {
		if c.explain {
			c.detail = fmt.Sprintf("node holds %d replicas, maxPerNode is %d", n, sp.MaxPerNode)
		}
		return c.fail(StageMaxPerNode, 0)
	}
	if n := sp.AZCount[c.n.az]; sp.MaxPerAz > 0 && n >= sp.MaxPerAz {
		if c.explain {
			c.detail = fmt.Sprintf("az %q holds %d replicas, maxPerAz is %d", c.n.az, n, sp.MaxPerAz)
		}
		return c.fail(StageMaxPerAz, 0)
	}
	return true
}

// Spread weights: a node already holding a replica costs more than any
// utilisation difference, and each replica more in an AZ costs as much as
// the whole policy range, so replicas fill empty nodes first, balanced
// over AZs, before doubling up; a strong affinity still wins.
const (
	spreadNodePenalty = 2 * policyScale
	spreadAZPenalty   = policyScale
)

// spreadScorer prefers nodes and AZs holding fewer of the service's replicas.
type spreadScorer struct{}

func (spreadScorer) Score(c *cycle) int64 {
	sp := c.s.t.spread
	if c.host != nil {
		return 0 // this replica is already here: no new replica on the node
	}
	return -int64(sp.NodeCount[c.n.node.ID])*spreadNodePenalty - int64(sp.AZCount[c.n.az])*spreadAZPenalty
}
