package scheduler

import (
	"fmt"
	"slices"
)

// sameAzFilter: under sameAz hard the whole replica is in one AZ; the
// search fixes the AZ first and this stage keeps the group in it.
type sameAzFilter struct{}

func (sameAzFilter) Name() string { return StageSameAz }

func (sameAzFilter) Filter(c *cycle) bool {
	s := c.s
	if !s.azFixed || c.n.az == s.az {
		return true
	}
	if c.explain {
		c.detail = fmt.Sprintf("the replica is in az %q, the node in %q", s.az, c.n.az)
	}
	return c.fail(StageSameAz, s.assigned)
}

// separateFilter: the node holds no group of this replica that the group
// must be separate from.
type separateFilter struct{}

func (separateFilter) Name() string { return StageSeparateFrom }

func (separateFilter) Filter(c *cycle) bool {
	if c.g.selfSep {
		if c.explain {
			c.detail = "the group's own jobs must both share a node and not share one"
		}
		return c.fail(StageSeparateFrom, 0)
	}
	clash := c.hostMask() & c.g.sep
	if clash == 0 {
		return true
	}
	if c.explain {
		c.detail = fmt.Sprintf("node holds job %s, which must be separate from this group", c.s.jobOfDepth(clash))
	}
	return c.fail(StageSeparateFrom, clash)
}

// antiAffinityFilter: the node, its AZ and its cloud are not forbidden (the
// other replica's failure domains, or nodes a caller excludes).
type antiAffinityFilter struct{}

func (antiAffinityFilter) Name() string { return StageAntiAffinity }

func (antiAffinityFilter) Filter(c *cycle) bool {
	f := &c.s.t.forbid
	var what string
	switch {
	case slices.Contains(f.nodes, c.n.pos):
		what = "node " + c.n.node.ID
	case f.azs[c.n.az]:
		what = "az " + c.n.az
	case f.clouds[c.n.cloud]:
		what = "cloud " + c.n.cloud
	default:
		return true
	}
	if c.explain {
		c.detail = fmt.Sprintf("%s is forbidden: it holds the other replica, or is excluded", what)
	}
	return c.fail(StageAntiAffinity, 0)
}
