package scheduler

import (
	"fmt"
	"slices"
	"strings"
)

// poolFilter: the node is in the replica's pool and in one of its tiers.
type poolFilter struct{}

func (poolFilter) Name() string { return StagePool }

func (poolFilter) Filter(c *cycle) bool {
	want := c.s.t.pool.name
	switch {
	case c.n.node.Pool != want:
		if c.explain {
			c.detail = fmt.Sprintf("node is in pool %q, not %q", c.n.node.Pool, want)
		}
		return c.fail(StagePool, 0)
	case c.n.tier < 0:
		if c.explain {
			c.detail = fmt.Sprintf("cloud %q is in no tier of pool %q", c.n.cloud, want)
		}
		return c.fail(StagePool, 0)
	}
	return true
}

// placeableFilter: registered, ready, neither cordoned nor draining, and not
// treated as removed by the caller.
type placeableFilter struct{}

func (placeableFilter) Name() string { return StagePlaceable }

func (placeableFilter) Filter(c *cycle) bool {
	removed := slices.Contains(c.s.t.removed, c.n.pos)
	if c.n.placeable && !removed {
		return true
	}
	if c.explain {
		n := c.n.node
		switch {
		case removed:
			c.detail = "node is being removed"
		case n.Status != "ready":
			c.detail = fmt.Sprintf("node is %s", n.Status)
		case n.Draining:
			c.detail = "node is draining"
		default:
			c.detail = "node is cordoned"
		}
	}
	return c.fail(StagePlaceable, 0)
}

// taintFilter: every job to place tolerates every taint of the node.
type taintFilter struct{}

func (taintFilter) Name() string { return StageTaints }

func (taintFilter) Filter(c *cycle) bool {
	for _, t := range c.n.taints {
		if !slices.Contains(c.g.tolerated, t) {
			if c.explain {
				c.detail = fmt.Sprintf("taint %q is not tolerated by job %s", t, c.s.untolerating(c.g, t))
			}
			return c.fail(StageTaints, 0)
		}
	}
	return true
}

// runtimeFilter: the node runs, for every job to place, one of the runtimes
// the job may run on (its runtime.oneOf, or what its launch implies).
type runtimeFilter struct{}

func (runtimeFilter) Name() string { return StageRuntime }

func (runtimeFilter) Filter(c *cycle) bool {
	for _, r := range c.g.runtimes {
		if c.n.rt.Fits(r.need) {
			continue
		}
		if c.explain {
			c.detail = fmt.Sprintf("job %s needs runtime %s; node runs %s", r.job, strings.Join(r.need.Names(), " or "), c.n.rt)
		}
		return c.fail(StageRuntime, 0)
	}
	return true
}

// constraintFilter: every constraint of every job to place holds on the
// node. Results are memoised per snapshot, expression and node.
type constraintFilter struct{}

func (constraintFilter) Name() string { return StageConstraints }

func (constraintFilter) Filter(c *cycle) bool {
	for _, e := range c.g.exprs {
		m := e.memo
		if m.err == nil && c.s.snap.holds(m, c.n) {
			continue
		}
		if c.explain {
			if m.err != nil {
				c.detail = fmt.Sprintf("job %s: constraint %q does not compile: %v", e.job, e.expr, m.err)
			} else {
				c.detail = fmt.Sprintf("job %s: constraint %q is not satisfied", e.job, e.expr)
			}
		}
		return c.fail(StageConstraints, 0)
	}
	return true
}
