package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// goExpr is a constraint the generator uses together with its meaning in
// Go, so the brute-force oracle does not depend on the CEL code under test.
type goExpr struct {
	expr  string
	holds func(n *fsm.Node) bool
}

var genExprs = []goExpr{
	{`node.labels.az != "c"`, func(n *fsm.Node) bool { return n.AZ() != "c" }},
	{`node.id != "n1"`, func(n *fsm.Node) bool { return n.ID != "n1" }},
	{`"fast" in node.labels.features`, func(n *fsm.Node) bool {
		v, ok := n.Labels["features"]
		return ok && slices.Contains(strings.Split(v, ","), "fast")
	}},
	{`node.capabilities["nic"] >= 1`, func(n *fsm.Node) bool {
		c, ok := findCapability(n.Inventory().Capabilities, "nic")
		return ok && c.Count >= 1
	}},
}

func exprMeaning(expr string) func(*fsm.Node) bool {
	for _, e := range genExprs {
		if e.expr == expr {
			return e.holds
		}
	}
	panic("unknown generated expression " + expr)
}

// world is a random small cluster with one pending bundle.
type world struct {
	c      *cluster
	bundle *fsm.Bundle
}

func genWorld(t *rapid.T) *world { return genWorldN(t, 1, 6) }

// genWorldN draws a cluster of lo..hi nodes.
func genWorldN(t *rapid.T, lo, hi int) *world { return genWorldWith(t, lo, hi, nil) }

// genWorldWith is genWorldN with the bundle's spec adjusted by edit.
func genWorldWith(t *rapid.T, lo, hi int, edit func(*fsm.BundleSpec)) *world {
	c := newCluster(t)
	pool := fsm.Pool{Name: "p", Scoring: rapid.SampledFrom([]string{"binpack", "spread"}).Draw(t, "scoring")}
	if rapid.IntRange(0, 3).Draw(t, "tiers") == 0 {
		pool.Tiers = []fsm.Tier{{Name: "t0", Cloud: "x"}, {Name: "t1", Cloud: "y"}}
	}
	if rapid.IntRange(0, 3).Draw(t, "caps") == 0 {
		pool.Caps = ledger.PoolCaps{MaxCapacity: int64(rapid.IntRange(4, 30).Draw(t, "maxCap")) * 1000, MaxCores: rapid.IntRange(0, 8).Draw(t, "maxCores"),
			MaxMemoryMiB: int64(rapid.IntRange(0, 16).Draw(t, "maxMem")) * 1024}
	}
	if rapid.Bool().Draw(t, "defaults") {
		pool.Defaults = fsm.PoolDefaults{Capacity: int64(rapid.IntRange(0, 4).Draw(t, "defCap")) * 500, Cores: rapid.IntRange(0, 1).Draw(t, "defCores"),
			MemoryMiB: int64(rapid.IntRange(0, 2).Draw(t, "defMem")) * 512}
	}
	c.pool(pool)
	if rapid.IntRange(0, 3).Draw(t, "clusterCaps") == 0 {
		c.ok(fsm.SetCapsType, &fsm.SetCapsRequest{Caps: fsm.ClusterCaps{Caps: ledger.PoolCaps{
			MaxCapacity: int64(rapid.IntRange(0, 30).Draw(t, "clusterMaxCap")) * 1000, MaxCores: rapid.IntRange(0, 8).Draw(t, "clusterMaxCores")}}})
	}
	n := rapid.IntRange(lo, hi).Draw(t, "nodes")
	for i := 1; i <= n; i++ {
		c.node(genNode(t, fmt.Sprintf("n%d", i)))
	}
	for i := range rapid.IntRange(0, max(3, n)).Draw(t, "existing") {
		genExisting(t, c, fmt.Sprintf("e%d", i))
	}
	spec := genSpec(t, c, "b")
	if edit != nil {
		edit(&spec)
	}
	return &world{c: c, bundle: c.bundle(spec)}
}

// Runtimes nodes offer and jobs need: mostly none (every node runs exec),
// so the other rules still get their share of the draws.
var (
	genRuntimeOffers = [][]string{nil, nil, nil, {"exec", "docker"}, {"wasm"}, {"compose", "exec"}}
	genRuntimeNeeds  = [][]string{nil, nil, nil, nil, {"docker"}, {"wasm", "compose"}, {"exec"}}
)

func genNode(t *rapid.T, id string) fsm.Node {
	n := mkNode(id, "p", rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, id+"az"),
		rapid.SampledFrom([]string{"x", "y"}).Draw(t, id+"cloud"),
		int64(rapid.IntRange(2, 16).Draw(t, id+"cap"))*1000, rapid.IntRange(0, 8).Draw(t, id+"cores"))
	// Memory is mostly known; a node without it (0) takes no memory request.
	n.TotalMemoryMiB = rapid.SampledFrom([]int64{4096, 8192, 2048, 16384, 0}).Draw(t, id+"mem")
	if f := rapid.SampledFrom([]string{"", "fast", "fast,slow", "slow"}).Draw(t, id+"features"); f != "" {
		n.Labels["features"] = f
	}
	for i := range rapid.IntRange(0, 2).Draw(t, id+"gpus") {
		n.GPUs = append(n.GPUs, ledger.GPU{Index: i, Model: rapid.SampledFrom([]string{"t4", "a100"}).Draw(t, id+"model"), Capacity: 1000})
	}
	if k := rapid.IntRange(0, 3).Draw(t, id+"nic"); k > 0 {
		n.Capabilities = []ledger.Capability{{Name: "nic", Count: int64(k), Attributes: map[string]string{
			"speed": rapid.SampledFrom([]string{"10g", "25g"}).Draw(t, id+"speed")}}}
	}
	if rapid.IntRange(0, 4).Draw(t, id+"taint") == 0 {
		n.Taints = []string{"special"}
	}
	n.Runtimes = rapid.SampledFrom(genRuntimeOffers).Draw(t, id+"runtimes")
	if rapid.IntRange(0, 6).Draw(t, id+"cordon") == 0 {
		n.Cordoned = true
	}
	return n
}

// genExisting places a one-job bundle on a random node when it fits, so
// nodes start with some usage.
func genExisting(t *rapid.T, c *cluster, id string) {
	st := c.state()
	nodes := st.Nodes("p")
	node := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, id+"node")]
	j := genJob(t, id+"j", "a")
	j.EditRules().Constraints, j.EditRules().Tolerations, j.EditRules().Affinities, j.Runtime = nil, []string{"special"}, nil, nil
	pool := st.Pool("p")
	g, err := ledger.Fit(node.Inventory(), node.Usage, pool.Effective(j.Requirements))
	if err != nil || ledger.CheckPool(pool.Caps, pool.Usage, g) != nil || !node.Placeable() {
		return
	}
	if row := st.CapScopeRow(ledger.ClusterScope); row != nil && ledger.CheckScope(row.Name, row.Caps, row.Usage, g) != nil {
		return
	}
	c.bundle(fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{j}})
	c.placeAt(id, 0, map[string]string{"a": node.ID})
}

func genJob(t *rapid.T, label, name string) fsm.Job {
	j := fsm.Job{Name: name}
	r := &j.Requirements
	r.Capacity = int64(rapid.IntRange(0, 12).Draw(t, label+"cap")) * 500
	r.Cores = rapid.IntRange(0, 3).Draw(t, label+"cores")
	if rapid.IntRange(0, 2).Draw(t, label+"mem") > 0 {
		r.MemoryMiB = int64(rapid.IntRange(1, 12).Draw(t, label+"memN")) * 512
		if rapid.Bool().Draw(t, label+"memLimit") {
			r.MemoryLimitMiB = r.MemoryMiB * 2
		}
	}
	switch rapid.IntRange(0, 7).Draw(t, label+"gpu") {
	case 0:
		r.GPUCapacity = int64(rapid.IntRange(1, 10).Draw(t, label+"share")) * 100
		r.GPUModel = rapid.SampledFrom([]string{"", "t4", "a100"}).Draw(t, label+"model")
	case 1:
		r.ExclusiveGPUs = 1
	}
	if rapid.IntRange(0, 3).Draw(t, label+"nic") == 0 {
		cr := ledger.CapabilityRequest{Name: "nic", Count: int64(rapid.IntRange(1, 2).Draw(t, label+"nicN"))}
		if rapid.Bool().Draw(t, label+"attr") {
			cr.AttributeMatches = map[string]string{"speed": "25g"}
		}
		r.Capabilities = []ledger.CapabilityRequest{cr}
	}
	if rapid.Bool().Draw(t, label+"tol") {
		j.EditRules().Tolerations = []string{"special"}
	}
	if rapid.IntRange(0, 3).Draw(t, label+"expr") == 0 {
		j.EditRules().Constraints = []string{rapid.SampledFrom(genExprs).Draw(t, label+"constraint").expr}
	}
	if need := rapid.SampledFrom(genRuntimeNeeds).Draw(t, label+"runtime"); need != nil {
		j.Runtime = &fsm.RuntimeRequirement{OneOf: need}
	}
	if rapid.IntRange(0, 3).Draw(t, label+"aff") == 0 {
		j.EditRules().Affinities = []fsm.Affinity{{Expression: genExprs[0].expr, Weight: rapid.IntRange(-100, 100).Draw(t, label+"w")}}
	}
	return j
}

// genSpec draws a valid bundle of 1..4 jobs with random placement rules.
func genSpec(t *rapid.T, c *cluster, id string) fsm.BundleSpec {
	spec := fsm.BundleSpec{ID: id, Pool: "p"}
	n := rapid.IntRange(1, 4).Draw(t, "jobs")
	names := []string{"j0", "j1", "j2", "j3"}[:n]
	for i, name := range names {
		j := genJob(t, name, name)
		for k, other := range names {
			if k == i {
				continue
			}
			switch rapid.IntRange(0, 5).Draw(t, name+"rel"+other) {
			case 0:
				j.CoLocateWith = append(j.CoLocateWith, other)
			case 1:
				j.SeparateFrom = append(j.SeparateFrom, other)
			}
		}
		spec.Jobs = append(spec.Jobs, j)
	}
	spec.Placement = fsm.Placement{SameNodeDefault: rapid.Bool().Draw(t, "snd"),
		SameAz: rapid.SampledFrom([]string{"off", "soft", "hard"}).Draw(t, "sameAz")}
	if rapid.Bool().Draw(t, "resilient") {
		rule := func(l string) string { return rapid.SampledFrom([]string{fsm.Allow, fsm.Forbid}).Draw(t, l) }
		spec.Resilience = &fsm.Resilience{SameNode: rule("rn"), SameAz: rule("raz"), SameCloud: rule("rc")}
	}
	return validSpec(c, spec)
}

// validSpec drops rules until the FSM's validation accepts the spec.
func validSpec(c *cluster, spec fsm.BundleSpec) fsm.BundleSpec {
	valid := func() bool { return fsm.Validate(&spec, c.state(), ExprChecker{}).Valid() }
	if !valid() && spec.Resilience != nil {
		spec.Resilience.SameCloud = fsm.Allow
	}
	if !valid() {
		for i := range spec.Jobs {
			spec.Jobs[i].SeparateFrom = nil
		}
	}
	return spec
}
