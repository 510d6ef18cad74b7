package scheduler

import (
	"cmp"
	"slices"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// Gang asks for one replica of a bundle to be placed as a gang: every job
// not yet placed lands, or none does (DESIGN §3.3).
type Gang struct {
	Spec *fsm.BundleSpec
	// Slot is the replica's ledger slot; its pool is Spec.SlotPool(Slot) and
	// every job's request is that pool's Effective(requirements).
	Slot int
	// Placed maps jobs of this replica that already hold a node to it; their
	// co-location groups are pinned there and only the other jobs are
	// placed (repair after a node loss re-places only the lost jobs).
	Placed map[string]string
	// Forbid keeps the replica off nodes, AZs and clouds: anti-affinity with
	// the other replica, plus any extra nodes a caller excludes.
	Forbid Forbid
	// Removed nodes are treated as gone (a drain or a what-if), counted as
	// not placeable.
	Removed []string
	// Spread holds where a service's other replicas are: a soft preference
	// for nodes and AZs with fewer of them, and the hard maxPerNode and
	// maxPerAz bounds. Nil for other kinds.
	Spread *Spread
	// NoExplain skips the explanation of a failure, which costs a pass over
	// the pool's nodes, for callers that will try something else anyway.
	NoExplain bool
}

// Forbid lists failure domains a replica must avoid.
type Forbid struct {
	Nodes  []string
	AZs    []string
	Clouds []string
}

// taskJob is one job of the replica.
type taskJob struct {
	spec  *fsm.Job
	req   ledger.Request // the pool's defaults layered under the job's requirements
	fixed string         // node already holding the job; "" when it is to be placed
}

// group is a co-location group: jobs that land on one node (§3.3).
type group struct {
	depth int    // position in the search order; the group's bit in conflict masks
	jobs  []int  // every job of the group (task job indices, ascending)
	place []int  // the jobs to place now
	fixed string // node pinning the group when some job already holds it
	sep   uint64 // depth bits of groups it must not share a node with
	// selfSep marks a group whose own jobs must be separate: contradictory,
	// so nothing passes the separateFrom stage (the FSM rejects such specs;
	// this keeps a stale one from being placed anyway).
	selfSep   bool
	dem       demand
	tolerated []string // taints every job to place tolerates
	runtimes  []jobRuntime
	exprs     []jobExpr
	affinity  []jobAffinity
}

// jobRuntime is the runtimes one job of a group may run on (one of them).
type jobRuntime struct {
	job  string
	need fsm.RuntimeSet
}

type jobExpr struct {
	job, expr string
	memo      *exprMemo
}

type jobAffinity struct {
	memo   *exprMemo
	weight int
}

// replicaTask is a Gang resolved against the snapshot.
type replicaTask struct {
	spec    *fsm.BundleSpec
	slot    int
	pool    *poolIndex
	policy  string
	jobs    []taskJob
	groups  []*group // in search order
	sameAz  string
	forbid  forbidSet
	removed []int32 // node positions treated as gone
	spread  *Spread
}

// forbidSet is Forbid resolved for lookups: nodes by index position (a
// handful, scanned), AZs and clouds in maps that are only looked up.
type forbidSet struct {
	nodes       []int32
	azs, clouds map[string]bool
}

func newForbidSet(x *index, f Forbid) forbidSet {
	set := func(l []string) map[string]bool {
		m := make(map[string]bool, len(l))
		for _, s := range l {
			m[s] = true
		}
		return m
	}
	return forbidSet{nodes: positions(x, f.Nodes), azs: set(f.AZs), clouds: set(f.Clouds)}
}

func positions(x *index, ids []string) []int32 {
	var out []int32
	for _, id := range ids {
		if n := x.node(id); n != nil {
			out = append(out, n.pos)
		}
	}
	return out
}

func (f forbidSet) any() bool { return len(f.nodes)+len(f.azs)+len(f.clouds) > 0 }

func newTask(sn *Snapshot, g Gang) *replicaTask {
	x := sn.idx
	pool := x.pool(g.Spec.SlotPool(g.Slot))
	t := &replicaTask{
		spec: g.Spec, slot: g.Slot, pool: pool, policy: fsm.ScoringBinpack,
		sameAz: g.Spec.Placement.SameAz, forbid: newForbidSet(x, g.Forbid),
		removed: positions(x, g.Removed), spread: g.Spread,
	}
	if pool.cfg != nil && pool.cfg.Scoring == fsm.ScoringSpread {
		t.policy = fsm.ScoringSpread
	}
	for i := range g.Spec.Jobs {
		j := &g.Spec.Jobs[i]
		t.jobs = append(t.jobs, taskJob{spec: j, req: pool.cfg.Effective(j.Requirements), fixed: g.Placed[j.Name]})
	}
	t.groups = buildGroups(sn, t)
	return t
}

// buildGroups forms the co-location groups (coLocateWith is symmetric and
// transitive; with sameNodeDefault the jobs naming neither rule form one
// group), their separations, and the search order.
func buildGroups(sn *Snapshot, t *replicaTask) []*group {
	root := unionGroups(t.spec)
	byRoot := map[int]*group{}
	var groups []*group
	for i := range t.jobs {
		g := byRoot[root[i]]
		if g == nil {
			g = &group{}
			byRoot[root[i]] = g
			groups = append(groups, g)
		}
		g.jobs = append(g.jobs, i)
	}
	for _, g := range groups {
		fillGroup(sn, t, g)
	}
	orderGroups(groups)
	separate(t, root, byRoot)
	return groups
}

func unionGroups(spec *fsm.BundleSpec) []int {
	parent := make([]int, len(spec.Jobs))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	byName := map[string]int{}
	for i := len(spec.Jobs) - 1; i >= 0; i-- {
		byName[spec.Jobs[i].Name] = i
	}
	bare := -1
	for i, j := range spec.Jobs {
		for _, name := range j.CoLocateWith {
			if k, ok := byName[name]; ok {
				parent[find(i)] = find(k)
			}
		}
		if spec.Placement.SameNodeDefault && len(j.CoLocateWith) == 0 && len(j.SeparateFrom) == 0 {
			if bare >= 0 {
				parent[find(i)] = find(bare)
			}
			bare = i
		}
	}
	for i := range parent {
		parent[i] = find(i)
	}
	return parent
}

func fillGroup(sn *Snapshot, t *replicaTask, g *group) {
	first := true
	for _, i := range g.jobs {
		j := &t.jobs[i]
		if j.fixed != "" {
			if g.fixed == "" {
				g.fixed = j.fixed
			}
			continue
		}
		g.place = append(g.place, i)
		g.dem.addRequest(j.req)
		if need := fsm.JobRuntimeNeed(j.spec, sn.idx.view.TemplateRuntime); need != 0 {
			g.runtimes = append(g.runtimes, jobRuntime{job: j.spec.Name, need: need})
		}
		for _, e := range j.spec.Constraints() {
			g.exprs = append(g.exprs, jobExpr{job: j.spec.Name, expr: e, memo: sn.expr(e)})
		}
		for _, a := range j.spec.Affinities() {
			g.affinity = append(g.affinity, jobAffinity{memo: sn.expr(a.Expression), weight: a.Weight})
		}
		if first {
			g.tolerated = slices.Clone(j.spec.Tolerations())
			first = false
		} else {
			g.tolerated = slices.DeleteFunc(g.tolerated, func(s string) bool { return !slices.Contains(j.spec.Tolerations(), s) })
		}
	}
}

// orderGroups decides the search order: pinned groups first (they have one
// candidate), then the most constrained, so dead ends show up early. Only
// efficiency depends on it; the search is complete in any order.
func orderGroups(groups []*group) {
	hard := func(g *group) int {
		h := len(g.dem.caps) + len(g.exprs)
		if g.dem.needsGPU() {
			h += 2
		}
		return h
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		if c := boolCmp(b.fixed != "", a.fixed != ""); c != 0 {
			return c
		}
		if c := cmp.Compare(hard(b), hard(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.dem.capacity, a.dem.capacity); c != 0 {
			return c
		}
		return cmp.Compare(a.jobs[0], b.jobs[0])
	})
	for d, g := range groups {
		g.depth = d
	}
}

// separate turns separateFrom (symmetric) into depth masks between groups.
func separate(t *replicaTask, root []int, byRoot map[int]*group) {
	byName := map[string]int{}
	for i := range t.jobs {
		byName[t.jobs[i].spec.Name] = i
	}
	for i := range t.jobs {
		for _, name := range t.jobs[i].spec.SeparateFrom {
			k, ok := byName[name]
			if !ok || k == i {
				continue
			}
			a, b := byRoot[root[i]], byRoot[root[k]]
			if a == b {
				a.selfSep = true
				continue
			}
			a.sep |= 1 << uint(b.depth)
			b.sep |= 1 << uint(a.depth)
		}
	}
}

// maxGroups is the number of groups a conflict mask can name; bundles have
// at most 64 jobs, so at most 64 groups.
const maxGroups = 64
