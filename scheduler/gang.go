package scheduler

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// GangResult is the outcome of placing one replica.
type GangResult struct {
	// Placed is true when every job of the replica holds a node.
	Placed bool
	// Places are the new placements, in job order, with their grants. They
	// fit the store PlaceGang was given; nothing is reserved in it.
	Places []fsm.Place
	// Nodes maps every job of the replica (new and already placed) to its
	// node; nil when not placed.
	Nodes map[string]string
	// SpansAZ is true when the replica's nodes are in more than one AZ.
	SpansAZ bool
	// Explain says why not, when not placed.
	Explain *fsm.Explain
	// BudgetExhausted is true when the search gave up on its budget: the
	// explanation is then of the deepest point reached, not a proof.
	BudgetExhausted bool
}

// PlaceGang places one replica as a gang against store (typically a batch's
// ledger overlay, possibly holding hypothetical releases). The search is a
// backtracking search over co-location groups with conflict-directed
// backjumping: complete, so a replica is reported unplaceable only when no
// assignment of its groups satisfies every hard rule, unless the search
// budget (Options.SearchBudget) runs out first. Under sameAz soft it first
// searches as if hard and relaxes only when no single-AZ placement exists.
func (sn *Snapshot) PlaceGang(store ledger.Store, g Gang, seed uint64) GangResult {
	t := newTask(sn, g)
	mode := t.sameAz
	s := newSearch(sn, t, store, seed, mode == fsm.SameAzHard || mode == fsm.SameAzSoft, false)
	if s.run() {
		return s.result()
	}
	if mode != fsm.SameAzSoft {
		return s.failure(g.NoExplain)
	}
	relaxed := newSearch(sn, t, store, seed, false, true)
	if relaxed.run() {
		return relaxed.result()
	}
	return relaxed.failure(g.NoExplain)
}

// hosted is what this replica holds on one node in the current branch.
type hosted struct {
	pos  int32
	mask uint64 // depth bits of the groups on it
	dem  demand // their summed demand
	jobs []int  // their jobs to place
}

// deadEnd is the deepest point where a group had no feasible node at all;
// explanations are computed there.
type deadEnd struct {
	set     bool
	depth   int
	assign  []int32
	az      string
	azFixed bool
}

type undo struct {
	host int // index into hosts; -1 when the assignment appended it
	old  hosted
}

// search is one backtracking search for one replica.
type search struct {
	snap    *Snapshot
	t       *replicaTask
	store   ledger.Store
	used    usageReader
	seed    uint64
	hardAZ  bool // keep the replica in one AZ
	soft    bool // score the same-AZ bonus
	chains  [][]filter
	scorers [][]scorer

	poolCaps    ledger.PoolCaps
	poolUsed    ledger.PoolUsage
	scopes      []scopeCaps // the capped cluster and cap group scopes
	sumCapacity int64       // what the groups assigned so far add to the pool
	sumCores    int
	sumMemory   int64

	assign   []int32 // node position by depth; -1 when unassigned
	assigned uint64
	hosts    []hosted
	undos    []undo
	az       string
	azFixed  bool

	budget, spent int
	exhausted     bool
	dead          deadEnd
	bufs          [][]cand
	cyc           cycle  // reused by every evaluation of the search
	gpu           gpuSim // reused by the GPU stage
}

func newSearch(sn *Snapshot, t *replicaTask, store ledger.Store, seed uint64, hardAZ, soft bool) *search {
	s := &search{
		snap: sn, t: t, store: store, used: usageOf(sn, store), seed: seed, hardAZ: hardAZ, soft: soft,
		assign: make([]int32, len(t.groups)), bufs: make([][]cand, len(t.groups)),
		budget: max(sn.e.opts.SearchBudget, budgetPerPoolNode*len(t.pool.nodes)),
	}
	for i := range s.assign {
		s.assign[i] = -1
	}
	for _, g := range t.groups {
		s.chains = append(s.chains, buildChain(t, g, hardAZ))
		s.scorers = append(s.scorers, buildScorers(t, g, soft))
	}
	s.poolCaps, s.poolUsed = store.Pool(t.pool.name)
	s.scopes = cappedScopes(store, t.pool.name)
	return s
}

// budgetPerPoolNode keeps the budget above a few full scans of the pool, so
// a group that fits nowhere is always scanned to the end before the search
// gives up (no hard rule is ever decided by sampling).
const budgetPerPoolNode = 4

// run searches; with hardAZ it tries one AZ after another.
func (s *search) run() bool {
	if len(s.t.groups) > maxGroups {
		return false
	}
	if !s.hardAZ {
		ok, _ := s.dfs(0)
		return ok
	}
	for _, az := range s.azOrder() {
		s.az, s.azFixed = az, true
		if ok, _ := s.dfs(0); ok {
			return true
		}
		if s.exhausted {
			break
		}
	}
	return false
}

// dfs places groups[d:] given groups[:d]. On failure it returns the conflict
// set: the depths whose choices contributed. A depth missing from it cannot
// help, so the caller skips its remaining candidates (backjumping), which
// keeps a group that fits nowhere from being retried under every choice of
// the groups before it.
func (s *search) dfs(d int) (bool, uint64) {
	if d == len(s.t.groups) {
		return true, 0
	}
	g := s.t.groups[d]
	bit := uint64(1) << uint(d)
	if len(g.place) == 0 {
		return s.pinnedOnly(g, bit)
	}
	sc := s.newScanner(g)
	var conflict uint64
	for {
		batch := sc.next(s.bufs[d])
		s.bufs[d] = batch
		if len(batch) == 0 {
			break
		}
		for _, cd := range batch {
			s.assignGroup(g, cd.pos)
			ok, cf := s.dfs(d + 1)
			if ok {
				return true, 0
			}
			s.unassign(g)
			if s.exhausted {
				return false, 0
			}
			if cf&bit == 0 {
				return false, cf
			}
			conflict |= cf &^ bit
		}
	}
	if sc.found == 0 && !s.exhausted {
		s.recordDeadEnd(d)
	}
	return false, conflict | sc.conflict
}

// pinnedOnly handles a group whose jobs all hold a node already: nothing to
// fit, but the groups after it must respect where it is.
func (s *search) pinnedOnly(g *group, bit uint64) (bool, uint64) {
	n := s.snap.idx.node(g.fixed)
	if n == nil {
		s.recordDeadEnd(g.depth)
		return false, 0
	}
	s.assignGroup(g, n.pos)
	ok, cf := s.dfs(g.depth + 1)
	if !ok {
		s.unassign(g)
	}
	return ok, cf &^ bit
}

// recordDeadEnd keeps the first dead end at the greatest depth. At depth 0
// of a hard same-AZ search nothing placed has chosen the AZ yet (the search
// was merely trying one), so that dead end is explained across all AZs.
func (s *search) recordDeadEnd(d int) {
	if s.dead.set && d <= s.dead.depth {
		return
	}
	fixed := s.azFixed && (d > 0 || s.t.groups[0].fixed != "")
	s.dead = deadEnd{set: true, depth: d, assign: slices.Clone(s.assign), az: s.az, azFixed: fixed}
}

func (s *search) hostIndex(pos int32) int {
	for i := range s.hosts {
		if s.hosts[i].pos == pos {
			return i
		}
	}
	return -1
}

func (s *search) hostAt(pos int32) *hosted {
	if i := s.hostIndex(pos); i >= 0 {
		return &s.hosts[i]
	}
	return nil
}

func (s *search) assignGroup(g *group, pos int32) {
	i := s.hostIndex(pos)
	if i < 0 {
		s.undos = append(s.undos, undo{host: -1})
		s.hosts = append(s.hosts, hosted{pos: pos})
		i = len(s.hosts) - 1
	} else {
		s.undos = append(s.undos, undo{host: i, old: s.hosts[i]})
	}
	h := &s.hosts[i]
	h.mask |= 1 << uint(g.depth)
	h.dem = *h.dem.plus(&g.dem)
	h.jobs = slices.Concat(h.jobs, g.place)
	s.assign[g.depth] = pos
	s.assigned |= 1 << uint(g.depth)
	s.sumCapacity += g.dem.capacity
	s.sumCores += g.dem.cores
	s.sumMemory += g.dem.memory
}

// unassign undoes the latest assignGroup, which must have been for g.
func (s *search) unassign(g *group) {
	u := s.undos[len(s.undos)-1]
	s.undos = s.undos[:len(s.undos)-1]
	if u.host < 0 {
		s.hosts = s.hosts[:len(s.hosts)-1]
	} else {
		s.hosts[u.host] = u.old
	}
	s.assign[g.depth] = -1
	s.assigned &^= 1 << uint(g.depth)
	s.sumCapacity -= g.dem.capacity
	s.sumCores -= g.dem.cores
	s.sumMemory -= g.dem.memory
}

// replicaAZ is the AZ of the replica's first placed group.
func (s *search) replicaAZ() (string, bool) {
	if len(s.assign) == 0 || s.assign[0] < 0 {
		return "", false
	}
	return s.snap.idx.nodes[s.assign[0]].az, true
}

// result turns the successful assignment into placements with grants,
// computed per node for all of the replica's new jobs there together.
func (s *search) result() GangResult {
	res := GangResult{Placed: true, Nodes: map[string]string{}}
	azs := map[string]bool{}
	for _, h := range s.hosts {
		n := &s.snap.idx.nodes[h.pos]
		azs[n.az] = true
		if len(h.jobs) == 0 {
			continue
		}
		used := s.used.usage(n)
		reqs := make([]ledger.Request, len(h.jobs))
		for i, j := range h.jobs {
			reqs[i] = s.t.jobs[j].req
		}
		grants, err := fitNode(n.inv, used, reqs)
		if err != nil { // the stages and fitNode disagree: a bug, never a wrong plan
			return s.inconsistent(n, err)
		}
		for i, j := range h.jobs {
			res.Places = append(res.Places, fsm.Place{Slot: s.t.slot, Job: s.t.jobs[j].spec.Name, Node: n.node.ID, Grant: grants[i]})
		}
	}
	for _, j := range s.t.jobs {
		if j.fixed != "" {
			res.Nodes[j.spec.Name] = j.fixed
		}
	}
	for _, p := range res.Places {
		res.Nodes[p.Job] = p.Node
	}
	slices.SortFunc(res.Places, func(a, b fsm.Place) int { return cmp.Compare(s.jobIndex(a.Job), s.jobIndex(b.Job)) })
	res.SpansAZ = len(azs) > 1
	return res
}

func (s *search) inconsistent(n *nodeInfo, err error) GangResult {
	return GangResult{Explain: &fsm.Explain{
		NodesEvaluated: 1, Filtered: map[string]int{StageCapacity: 1},
		NearestMiss: &fsm.NearestMiss{NodeID: n.node.ID, Stage: StageCapacity, Detail: fmt.Sprintf("internal: %v", err)},
	}}
}

func (s *search) jobIndex(name string) int {
	return slices.IndexFunc(s.t.jobs, func(j taskJob) bool { return j.spec.Name == name })
}

// failure explains the deepest dead end, unless told not to.
func (s *search) failure(noExplain bool) GangResult {
	res := GangResult{BudgetExhausted: s.exhausted}
	if !noExplain {
		res.Explain = s.explain()
	}
	return res
}
