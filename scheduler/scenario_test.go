package scheduler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// scenario is one file of testdata/scenarios: an inventory, bundles placed
// in one batch (in order), and the properties the outcome must have.
// Quantities are the FSM's milli-units (capacity 4000 = 4 units).
type scenario struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Pools       []fsm.Pool       `json:"pools"`
	Nodes       []fsm.Node       `json:"nodes"`
	Existing    []existing       `json:"existing"`
	Bundles     []fsm.BundleSpec `json:"bundles"`
	Seed        uint64           `json:"seed"`
	// Place adds existing bundles (partly placed ones) to the batch, after
	// the new ones.
	Place []string `json:"place"`
	// Heal runs Batch.Heal on these existing bundles instead of placing.
	Heal []string `json:"heal"`
	// Seeds, when set, places the bundles once per seed (each twice, to
	// check the plans are identical) and checks VariesBySeed.
	Seeds        []uint64      `json:"seeds"`
	VariesBySeed bool          `json:"variesBySeed"`
	Expect       []expectation `json:"expect"`
}

// existing is a bundle already placed before the scenario's batch.
type existing struct {
	Spec         fsm.BundleSpec    `json:"spec"`
	Primary      map[string]string `json:"primary"` // job → node, slot 0
	Backup       map[string]string `json:"backup"`  // job → node, slot 1
	Degradations []fsm.Degradation `json:"degradations"`
}

type expectation struct {
	Bundle        string              `json:"bundle"`
	Placed        *bool               `json:"placed"`
	BackupPlaced  *bool               `json:"backupPlaced"`
	Degradations  []string            `json:"degradations"` // exact set when present
	State         string              `json:"state"`
	Nodes         map[string][]string `json:"nodes"` // primary job → allowed nodes
	BackupNodes   map[string][]string `json:"backupNodes"`
	AZs           []string            `json:"azs"` // allowed AZs of every primary node
	BackupAZs     []string            `json:"backupAzs"`
	Clouds        []string            `json:"clouds"`
	BackupClouds  []string            `json:"backupClouds"`
	SameNode      [][]string          `json:"sameNode"`      // primary jobs sharing one node
	DistinctNodes [][]string          `json:"distinctNodes"` // primary jobs on pairwise distinct nodes
	SingleAZ      *bool               `json:"singleAz"`
	BackupApart   []string            `json:"backupApart"`   // "node", "az", "cloud": no primary/backup overlap
	GrantCapacity map[string]int64    `json:"grantCapacity"` // primary job → granted capacity
	GrantCores    map[string]int      `json:"grantCores"`    // primary job → number of pinned cores
	Moved         *bool               `json:"moved"`         // heal: the backup was moved
	Explain       *explainExpect      `json:"explain"`
	Service       *serviceExpect      `json:"service"`
}

type explainExpect struct {
	NodesEvaluated *int           `json:"nodesEvaluated"`
	Filtered       map[string]int `json:"filtered"` // exact
	NearestMiss    *struct {
		NodeID         string `json:"nodeId"`
		Stage          string `json:"stage"`
		DetailContains string `json:"detailContains"`
	} `json:"nearestMiss"`
}

func loadScenarios(t *testing.T) map[string]scenario {
	t.Helper()
	files, err := filepath.Glob("testdata/scenarios/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	out := map[string]scenario{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var sc scenario
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = sc
	}
	return out
}

func TestScenarios(t *testing.T) {
	all := loadScenarios(t)
	for _, name := range slices.Sorted(mapsKeys(all)) {
		sc := all[name]
		t.Run(name, func(t *testing.T) {
			if len(sc.Seeds) > 0 {
				runSeeds(t, sc)
				return
			}
			runScenario(t, sc, sc.Seed)
		})
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// build creates the scenario's cluster up to (not including) its batch.
func build(t *testing.T, sc scenario) (*cluster, []*fsm.Bundle) {
	c := newCluster(t)
	for _, p := range sc.Pools {
		c.pool(p)
	}
	for _, n := range sc.Nodes {
		c.node(n)
	}
	for _, e := range sc.Existing {
		c.bundle(e.Spec)
		if len(e.Primary) > 0 {
			c.placeAt(e.Spec.ID, 0, e.Primary)
		}
		// Degradations first: the FSM accepts a backup that breaks a forbid
		// only when the bundle records it.
		if e.Degradations != nil {
			u := fsm.BundleUpdate{BundleID: e.Spec.ID, SetDegradations: true, Degradations: e.Degradations}
			c.commit(&fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{u}}}})
		}
		if len(e.Backup) > 0 {
			c.placeAt(e.Spec.ID, 1, e.Backup)
		}
	}
	var bundles []*fsm.Bundle
	for _, spec := range sc.Bundles {
		bundles = append(bundles, c.bundle(spec))
	}
	for _, id := range sc.Place {
		bundles = append(bundles, c.state().Bundle(id))
	}
	checkInvariants(t, c.state())
	return c, bundles
}

func decide(c *cluster, sc scenario, bundles []*fsm.Bundle, seed uint64) (*fsm.Plan, []Result) {
	b := NewEngine(Options{}).Snapshot(c.state()).NewBatch(seed)
	var res []Result
	if len(sc.Heal) > 0 {
		for _, id := range sc.Heal {
			res = append(res, b.Heal(c.state().Bundle(id)))
		}
	} else {
		res = b.PlaceAll(bundles)
	}
	return b.Plan(1), res
}

func runScenario(t *testing.T, sc scenario, seed uint64) *fsm.State {
	c, bundles := build(t, sc)
	plan, results := decide(c, sc, bundles, seed)
	again, _ := decide(c, sc, bundles, seed)
	if !reflect.DeepEqual(plan, again) {
		t.Fatalf("same input and seed gave different plans")
	}
	if len(sc.Heal) == 0 && len(sc.Bundles) > 0 {
		checkDryRun(t, c, bundles[0], results[0], seed)
	}
	c.commit(plan)
	st := c.state()
	checkInvariants(t, st)
	byID := map[string]Result{}
	for _, r := range results {
		byID[r.BundleID] = r
	}
	for _, e := range sc.Expect {
		b := st.Bundle(e.Bundle)
		if b == nil {
			t.Fatalf("bundle %s missing", e.Bundle)
		}
		checkExpectation(t, st, b, byID[e.Bundle], e)
	}
	return st
}

// checkDryRun: a dry run with the batch's seed reproduces the first
// bundle's decision.
func checkDryRun(t *testing.T, c *cluster, b *fsm.Bundle, r Result, seed uint64) {
	t.Helper()
	dry, ex := NewEngine(Options{}).Snapshot(c.state()).DryRun(b.Spec, seed)
	var want []fsm.Place
	if r.Update != nil {
		want = r.Update.Place
	}
	var got []fsm.Place
	for _, rep := range dry.Replicas {
		for _, j := range rep.Jobs {
			if j.Placed() {
				got = append(got, fsm.Place{Slot: rep.Slot, Job: j.Name, Node: j.NodeID, Grant: j.Grant})
			}
		}
	}
	slices.SortFunc(want, placeOrder)
	slices.SortFunc(got, placeOrder)
	if !jsonEqual(want, got) {
		t.Fatalf("dry run placed %+v, the batch %+v", got, want)
	}
	if !r.PrimaryPlaced && !reflect.DeepEqual(ex, r.Explain) {
		t.Fatalf("dry run explain %+v, the batch %+v", ex, r.Explain)
	}
}

func placeOrder(a, b fsm.Place) int {
	if a.Slot != b.Slot {
		return a.Slot - b.Slot
	}
	return strings.Compare(a.Job, b.Job)
}

// runSeeds places the scenario under several seeds: each decision must be
// reproducible, and with VariesBySeed some tie must break differently.
func runSeeds(t *testing.T, sc scenario) {
	choices := map[string]bool{}
	for _, seed := range sc.Seeds {
		st := runScenario(t, sc, seed)
		var sig []string
		for _, spec := range sc.Bundles {
			for job, node := range replicaNodes(st.Bundle(spec.ID), fsm.RolePrimary) {
				sig = append(sig, spec.ID+"/"+job+"@"+node)
			}
		}
		slices.Sort(sig)
		choices[strings.Join(sig, ",")] = true
	}
	if sc.VariesBySeed && len(choices) < 2 {
		t.Fatalf("every seed made the same choice: %v", choices)
	}
}
