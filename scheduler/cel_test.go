package scheduler

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

var _ fsm.ExprChecker = ExprChecker{}

func TestExprCheckerAcceptsAndRejects(t *testing.T) {
	good := []string{
		`node.labels.rack != "r7"`,
		`"st2110" in node.labels.features`,
		`"nic" in node.capabilities && node.capabilities["nic"] >= 2`,
		`node.gpus.exists(g, g.model == "t4" && g.capacity >= 0.5)`,
		`node.id.startsWith("edge-") || node.pool == "p"`,
		`!has(node.labels.rack) || node.labels.rack != "r7"`,
		`size(node.gpus) > 1`,
		`node.gpus.all(a, node.gpus.all(b, a.index != b.index || a.model == b.model))`,
	}
	for _, e := range good {
		if err := (ExprChecker{}).Check(e); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	bad := map[string]string{
		``:                        "empty",
		`node.labels.rack ==`:     "Syntax error",
		`node.labels.rack`:        "must be a bool",
		`1 + 2`:                   "must be a bool",
		`node.lables.rack == "x"`: `no field "lables"`,
		`nodes.id == "x"`:         "undeclared reference",
		`node.gpus.all(a, node.gpus.all(b, node.gpus.all(c, node.gpus.all(d, a.index == d.index))))`: "too expensive",
	}
	for e, want := range bad {
		err := (ExprChecker{}).Check(e)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", e, err, want)
		}
	}
}

func TestExprEvaluation(t *testing.T) {
	n := &nodeInfo{act: &actCell{}, node: &fsm.Node{ID: "n1", Pool: "p", Labels: map[string]string{"features": "st2110, ptp", "rack": "r1"}}}
	n.inv = ledger.Inventory{
		GPUs:         []ledger.GPU{{Index: 0, Model: "t4", Capacity: 500}},
		Capabilities: []ledger.Capability{{Name: "nic", Count: 2}},
	}
	cases := map[string]bool{
		`"ptp" in node.labels.features`:                      true, // items are trimmed
		`"st" in node.labels.features`:                       false,
		`"ptp" in node.labels.rack`:                          false,
		`node.labels.missing == "x"`:                         false, // evaluation error: not satisfied
		`node.labels.missing != "x"`:                         false,
		`node.capabilities["nic"] == 2`:                      true,
		`node.capabilities["gpu-licence"] > 0`:               false, // no such key
		`node.gpus.exists(g, g.capacity == 0.5)`:             true,
		`node.gpus[3].model == "t4"`:                         false, // index out of range
		`node.id == "n1" && node.pool == "p"`:                true,
		`2 in [1, 2] && "k" in {"k": 1}`:                     true,
		`1 / (size(node.gpus) - 1) > 0`:                      false, // division by zero
		`node.labels.rack.matches("^r[0-9]+$")`:              true,
		`"st2110" in node.labels.features.split(", ")`:       false, // no strings extension: a compile error
		`node.labels.features.contains("st2110")`:            true,
		`node.gpus.filter(g, g.model == "a100").size() == 0`: true,
	}
	for e, want := range cases {
		prg, err := compileExpr(e)
		if err != nil {
			if want {
				t.Errorf("%s: %v", e, err)
			}
			continue
		}
		if got := evalBool(prg, n.activation()); got != want {
			t.Errorf("%s: got %v, want %v", e, got, want)
		}
	}
}

func TestExprCacheIsBoundedLRU(t *testing.T) {
	c := newExprCache(3)
	for i := range 5 {
		if _, err := c.get(fmt.Sprintf("node.id == \"n%d\"", i)); err != nil {
			t.Fatal(err)
		}
	}
	if c.len() != 3 {
		t.Fatalf("cache holds %d, want 3", c.len())
	}
	// A bad expression is cached with its error, and the oldest entries go.
	if _, err := c.get("node.nope"); err == nil {
		t.Fatal("expected an error")
	}
	c.mu.Lock()
	_, oldest := c.byKey[`node.id == "n2"`]
	_, newest := c.byKey["node.nope"]
	c.mu.Unlock()
	if oldest || !newest {
		t.Fatalf("LRU order wrong: n2 kept=%v, newest kept=%v", oldest, newest)
	}
}

func TestExprCacheConcurrent(t *testing.T) {
	c := newExprCache(8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := c.get(fmt.Sprintf("node.id == \"n%d\"", (g+i)%12)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if c.len() > 8 {
		t.Fatalf("cache grew to %d", c.len())
	}
}

// TestFSMValidatesExpressionsWithChecker: the FSM rejects a bundle whose
// constraint does not compile, through ExprChecker.
func TestFSMValidatesExpressionsWithChecker(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{{Name: "a", NodeRules: &fsm.NodeRules{Constraints: []string{`node.labels.rack`}}}}}
	res := c.apply(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
	if res.Err == nil || !strings.Contains(res.Err.Error(), fsm.CodeInvalidExpression) {
		t.Fatalf("got %v, want invalidExpression", res.Err)
	}
}
