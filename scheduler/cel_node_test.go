package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

var _ fsm.ExprEvaluator = ExprChecker{}

// TestExprEvalDeterministic: a comprehension over a node's maps sees the
// keys in sorted order, every time, so the FSM's re-check cannot depend on
// Go's map order.
func TestExprEvalDeterministic(t *testing.T) {
	labels := map[string]string{}
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("k%02d", i)
		labels[k], keys = "v", append(keys, `"`+k+`"`)
	}
	n := &fsm.Node{ID: "n1", Pool: "p", Labels: labels, Capabilities: []ledger.Capability{{Name: "b", Count: 1}, {Name: "a", Count: 2}}}
	exprs := []string{
		`node.labels.map(k, k) == [` + strings.Join(keys, ", ") + `]`,
		`node.capabilities.map(k, k) == ["a", "b"]`,
		`node.map(k, k) == ["capabilities", "gpus", "id", "labels", "pool"]`,
	}
	for _, e := range exprs {
		for range 20 {
			ok, err := ExprChecker{}.Eval(e, n)
			if err != nil || !ok {
				t.Fatalf("%s: %v, %v", e, ok, err)
			}
		}
	}
}

// TestExprEvalErrors: the re-check's evaluator reports what placement
// treats as "not satisfied": compile errors and evaluation errors.
func TestExprEvalErrors(t *testing.T) {
	n := &fsm.Node{ID: "n1", Pool: "p", Labels: map[string]string{"az": "a"}}
	for expr, want := range map[string]string{
		`node.labels.rack == "r1"`: "no such key",
		`node.labels.az ==`:        "Syntax error",
		`node.nope == 1`:           `no field "nope"`,
	} {
		if _, err := (ExprChecker{}).Eval(expr, n); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", expr, err, want)
		}
	}
	if ok, err := (ExprChecker{}).Eval(`node.labels.az == "a"`, n); !ok || err != nil {
		t.Fatalf("a holding constraint: %v, %v", ok, err)
	}
}
