package scheduler

import (
	"cmp"
	"math/bits"
	"slices"
)

// cand is a feasible node with its score.
type cand struct {
	pos   int32
	score int64
	tie   uint64
}

// scanner yields a group's feasible nodes batch by batch: tier by tier (the
// cost cascade: a later tier is looked at only once the earlier ones are
// used up), each tier's candidate list walked in a seeded rotation. A batch
// ends after k feasible nodes (Nomad-style limit-and-sample: the best of
// about 2·log2 N feasible nodes is nearly as good as the best of all, at a
// fraction of the cost) and is returned best first. The next batch resumes
// where the last stopped, so every node is eventually examined: sampling
// changes which feasible node is tried first, never whether one is found.
type scanner struct {
	s     *search
	g     *group
	lists [][][]int32 // per tier, the index lists to walk as one
	full  bool        // lists are not index-derived: run the whole chain
	tier  int
	n     int // length of the current tier's lists together
	start int // rotation offset in them
	off   int // how many were examined
	k     int

	conflict uint64 // union of the rejected nodes' conflict sets
	found    int    // feasible nodes returned so far
}

func (s *search) newScanner(g *group) *scanner {
	sc := &scanner{s: s, g: g}
	if g.fixed != "" {
		// Part of the group already holds a node: the rest must join it.
		sc.full = true
		if n := s.snap.idx.node(g.fixed); n != nil {
			sc.lists = [][][]int32{{{n.pos}}}
		}
	} else {
		for _, b := range s.t.pool.tiers {
			sc.lists = append(sc.lists, b.candidates(s, g))
		}
	}
	sc.startTier()
	return sc
}

func (sc *scanner) startTier() {
	sc.off, sc.start, sc.n = 0, 0, 0
	if sc.tier >= len(sc.lists) {
		return
	}
	for _, l := range sc.lists[sc.tier] {
		sc.n += len(l)
	}
	if sc.n > 0 {
		sc.start = int(derive(sc.s.seed, uint64(sc.g.depth), uint64(sc.tier)) % uint64(sc.n))
	}
	sc.k = sc.s.sampleSize(sc.n)
}

// at is the i-th node of the current tier's lists taken together.
func (sc *scanner) at(i int) int32 {
	for _, l := range sc.lists[sc.tier] {
		if i < len(l) {
			return l[i]
		}
		i -= len(l)
	}
	panic("scheduler: scan index out of range")
}

// sampleSize is k for a candidate list of n nodes: all of a small list,
// else max(2·⌈log2 n⌉, floor).
func (s *search) sampleSize(n int) int {
	o := &s.snap.e.opts
	if o.DisableSampling || n <= o.ExhaustiveBelow {
		return n
	}
	return max(2*bits.Len(uint(n-1)), o.SampleFloor)
}

// next returns the next batch, best first, reusing buf; an empty batch means
// the lists are exhausted or the search budget is spent.
func (sc *scanner) next(buf []cand) []cand {
	buf = buf[:0]
	c := &sc.s.cyc
	for sc.tier < len(sc.lists) {
		for sc.off < sc.n && len(buf) < sc.k {
			if sc.s.spent >= sc.s.budget {
				sc.s.exhausted = true
				return buf[:0]
			}
			pos := sc.at((sc.start + sc.off) % sc.n)
			sc.off++
			if len(sc.s.t.removed) > 0 && slices.Contains(sc.s.t.removed, pos) {
				continue // gone: the index does not know, the placeable stage is skipped
			}
			if sc.s.evaluate(sc.g, pos, c, sc.full) {
				if buf == nil {
					buf = make([]cand, 0, min(sc.k, sc.n))
				}
				buf = append(buf, cand{pos: pos, score: score(sc.s.scorers[sc.g.depth], c), tie: sc.s.tie(pos)})
			} else {
				sc.conflict |= c.conflict
			}
		}
		if len(buf) > 0 {
			slices.SortFunc(buf, byScore)
			sc.found += len(buf)
			return buf
		}
		sc.tier++
		sc.startTier()
	}
	return buf
}

func byScore(a, b cand) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := cmp.Compare(a.tie, b.tie); c != 0 {
		return c
	}
	return cmp.Compare(a.pos, b.pos)
}

// tie is the seeded tie-break: stable for a node id and a seed, so a dry run
// with the leader's seed picks the same node among equals.
func (s *search) tie(pos int32) uint64 {
	return mix64(s.seed ^ s.snap.idx.nodes[pos].idHash)
}

// evaluate runs the group's chain on one node; full also runs the stages
// the index normally answers.
func (s *search) evaluate(g *group, pos int32, c *cycle, full bool) bool {
	s.spent++
	s.cycleFor(c, g, pos, false)
	chain := s.chains[g.depth]
	if !full {
		chain = chain[indexedStages:]
	}
	_, ok := run(chain, c)
	return ok
}

// cycleFor prepares c for evaluating node pos for group g.
func (s *search) cycleFor(c *cycle, g *group, pos int32, explain bool) {
	n := &s.snap.idx.nodes[pos]
	*c = cycle{s: s, g: g, n: n, used: s.used.usage(n), explain: explain, dem: &g.dem}
	if h := s.hostAt(pos); h != nil {
		c.host = h
		c.dem = h.dem.plus(&g.dem)
	}
}

// azOrder is the order in which a hard same-AZ search tries AZs: the AZ of a
// pinned group if there is one; else the AZ of the first group's best
// candidate first, then the others in a seeded rotation. Forbidden AZs are
// skipped: the replica could not use them.
func (s *search) azOrder() []string {
	for _, g := range s.t.groups {
		if g.fixed != "" {
			if n := s.snap.idx.node(g.fixed); n != nil {
				return []string{n.az}
			}
			return nil
		}
	}
	azs := slices.DeleteFunc(slices.Clone(s.t.pool.azs), func(az string) bool { return s.t.forbid.azs[az] })
	if len(azs) < 2 {
		return azs
	}
	start := int(derive(s.seed, hashString("az")) % uint64(len(azs)))
	azs = append(azs[start:], azs[:start]...)
	if pref, ok := s.preferredAZ(); ok {
		if i := slices.Index(azs, pref); i > 0 {
			azs = slices.Insert(slices.Delete(azs, i, i+1), 0, pref)
		}
	}
	return azs
}

// preferredAZ is the AZ of the first group's best candidate from one
// unrestricted batch.
func (s *search) preferredAZ() (string, bool) {
	if len(s.t.groups) == 0 {
		return "", false
	}
	s.azFixed = false
	batch := s.newScanner(s.t.groups[0]).next(nil)
	if len(batch) == 0 {
		return "", false
	}
	return s.snap.idx.nodes[batch[0].pos].az, true
}

// jobOfDepth names a job of the shallowest group in mask (for details).
func (s *search) jobOfDepth(mask uint64) string {
	d := bits.TrailingZeros64(mask)
	if d >= len(s.t.groups) {
		return "?"
	}
	return s.t.jobs[s.t.groups[d].jobs[0]].spec.Name
}

// untolerating names a job of g that does not tolerate taint.
func (s *search) untolerating(g *group, taint string) string {
	for _, j := range g.place {
		if !slices.Contains(s.t.jobs[j].spec.Tolerations(), taint) {
			return s.t.jobs[j].spec.Name
		}
	}
	return "?"
}
