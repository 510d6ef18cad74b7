package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/amserver/amserver/fsm"
)

// explain evaluates, at the deepest dead end of the search, the group that
// had nowhere to go against every node, in full chain order and without
// sampling, so the counts are exact for that point: every node of the
// cluster is counted once, against the first stage that rejects it (nodes of
// other pools against "pool"). The nearest miss is the node that passed the
// most stages, the first by id among equals.
func (s *search) explain() *fsm.Explain {
	d := s.dead
	if !d.set { // budget ran out before any dead end: explain where it stood
		d = deadEnd{depth: s.firstUnassigned(), assign: slices.Clone(s.assign), az: s.az, azFixed: s.azFixed}
	}
	if len(s.t.groups) == 0 {
		return &fsm.Explain{Filtered: map[string]int{}}
	}
	d.depth = min(d.depth, len(s.t.groups)-1)
	s.restore(d)
	g := s.t.groups[d.depth]
	ex := &fsm.Explain{NodesEvaluated: len(s.snap.idx.nodes), Filtered: map[string]int{}}
	nodes := s.t.pool.nodes
	if g.fixed != "" {
		// A pinned group can only join its node: that is the one to explain.
		ex.NodesEvaluated = 0
		nodes = nil
		if n := s.snap.idx.node(g.fixed); n != nil {
			ex.NodesEvaluated, nodes = 1, []int32{n.pos}
		}
	} else if other := len(s.snap.idx.nodes) - len(nodes); other > 0 {
		ex.Filtered[StagePool] = other
	}
	s.countRejections(g, nodes, ex)
	return ex
}

func (s *search) countRejections(g *group, nodes []int32, ex *fsm.Explain) {
	chain := s.chains[g.depth]
	best := -1
	c := &s.cyc
	for _, pos := range nodes {
		s.cycleFor(c, g, pos, false)
		passed, ok := run(chain, c)
		if ok {
			continue
		}
		ex.Filtered[c.failKey]++
		if passed > best {
			// Only a new nearest miss needs its detail written out.
			best = passed
			s.cycleFor(c, g, pos, true)
			run(chain, c)
			ex.NearestMiss = &fsm.NearestMiss{NodeID: c.n.node.ID, Stage: c.failKey, Detail: c.detail}
		}
	}
}

func (s *search) firstUnassigned() int {
	for d, pos := range s.assign {
		if pos < 0 {
			return d
		}
	}
	return len(s.assign)
}

// restore rebuilds the search state of a dead end: its AZ and the groups
// assigned before it.
func (s *search) restore(d deadEnd) {
	for len(s.undos) > 0 {
		s.unassign(s.t.groups[s.depthOfLastUndo()])
	}
	s.az, s.azFixed = d.az, d.azFixed
	for depth := 0; depth < d.depth && depth < len(d.assign); depth++ {
		if pos := d.assign[depth]; pos >= 0 {
			s.assignGroup(s.t.groups[depth], pos)
		}
	}
}

// depthOfLastUndo is the deepest assigned depth: assignments are undone in
// reverse depth order.
func (s *search) depthOfLastUndo() int {
	for d := len(s.assign) - 1; d >= 0; d-- {
		if s.assign[d] >= 0 {
			return d
		}
	}
	return 0
}

// Summary renders an explanation in one line for degradation messages:
// "capacity 12, antiAffinity 4 of 20 nodes; nearest: n3 (cores: need 4 cores, 2 free of 8)".
func Summary(ex *fsm.Explain) string {
	if ex == nil {
		return ""
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(ex.Filtered)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, ex.Filtered[k])
	}
	fmt.Fprintf(&b, " of %d nodes", ex.NodesEvaluated)
	if m := ex.NearestMiss; m != nil {
		fmt.Fprintf(&b, "; nearest: %s (%s: %s)", m.NodeID, m.Stage, m.Detail)
	}
	return b.String()
}
