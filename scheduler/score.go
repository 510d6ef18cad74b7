package scheduler

// Scores are integers so every replica of the decision computes the same
// order. A node's score is the sum of the scorers' terms; ties break by a
// hash of the seed and the node id.
const (
	// policyScale is the range of the pool policy term: utilisation after
	// placement in permille (binpack) or its complement (spread).
	policyScale = 1000
	// affinityScale turns an affinity weight (-100..100) into score points:
	// a weight-100 affinity outweighs any utilisation difference, a weight of
	// 10 is worth a tenth of it.
	affinityScale = 10
	// sameAzBonus prefers the AZ the replica already uses under sameAz soft;
	// it outweighs the policy but not a strong affinity.
	sameAzBonus = 1500
)

// policyScorer implements the pool's scoring policy: binpack prefers the
// most allocated nodes (fewer, fuller nodes; large holes stay free), spread
// the least allocated. Utilisation is the dominant resource's: the larger
// of the compute fraction (capacity and, on nodes with cores, pinned cores,
// averaged) and, on nodes with memory, the memory fraction, so a node full
// of memory reads as full however idle its CPUs are.
type policyScorer struct{ spread bool }

func (p policyScorer) Score(c *cycle) int64 {
	inv := &c.n.inv
	var util int64
	if inv.Allocatable > 0 {
		util = (c.used.Capacity + c.dem.capacity) * policyScale / inv.Allocatable
	}
	if inv.TotalCores > 0 {
		cores := int64(c.used.Cores.Count()+c.dem.cores) * policyScale / int64(inv.TotalCores)
		util = (util + cores) / 2
	}
	if inv.TotalMemoryMiB > 0 {
		util = max(util, (c.used.MemoryMiB+c.dem.memory)*policyScale/inv.TotalMemoryMiB)
	}
	util = min(max(util, 0), policyScale)
	if p.spread {
		return policyScale - util
	}
	return util
}

// affinityScorer adds weight × affinityScale for every affinity of the
// group's jobs that holds on the node; an expression that errors adds 0.
type affinityScorer struct{}

func (affinityScorer) Score(c *cycle) int64 {
	var sum int64
	for _, a := range c.g.affinity {
		if m := a.memo; m.err == nil && c.s.snap.holds(m, c.n) {
			sum += int64(a.weight) * affinityScale
		}
	}
	return sum
}

// sameAzScorer prefers the AZ of the replica's first group under sameAz
// soft, once the hard attempt has failed and the replica may span AZs.
type sameAzScorer struct{}

func (sameAzScorer) Score(c *cycle) int64 {
	if az, ok := c.s.replicaAZ(); ok && az == c.n.az {
		return sameAzBonus
	}
	return 0
}

// buildScorers returns the scorers for a group.
func buildScorers(t *replicaTask, g *group, soft bool) []scorer {
	out := []scorer{policyScorer{spread: t.policy == "spread"}}
	if len(g.affinity) > 0 {
		out = append(out, affinityScorer{})
	}
	if soft {
		out = append(out, sameAzScorer{})
	}
	if t.spread != nil {
		out = append(out, spreadScorer{})
	}
	return out
}

// score sums the scorers.
func score(scorers []scorer, c *cycle) int64 {
	var s int64
	for _, sc := range scorers {
		s += sc.Score(c)
	}
	return s
}
