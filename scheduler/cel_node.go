package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// evalBool runs a program; any error or non-bool result is false, so an
// expression that errors for a node never passes a constraint or scores.
func evalBool(prg cel.Program, act interpreter.Activation) bool {
	ok, err := evalExpr(prg, act)
	return err == nil && ok
}

// evalExpr runs a program and reports its boolean result or why it has none.
func evalExpr(prg cel.Program, act interpreter.Activation) (bool, error) {
	out, _, err := prg.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("expression gave %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// activation is the CEL input of a node, built once (see actCell) as CEL
// values, so evaluations do no reflection.
func (n *nodeInfo) activation() interpreter.Activation {
	n.act.once.Do(func() { n.act.act = nodeActivation(n.node, n.inv) })
	return n.act.act
}

// nodeActivation is the CEL input of a node with inventory inv. The
// scheduler and the FSM's plan re-check both evaluate through it, so they
// agree on every expression. Maps iterate in key order: a comprehension
// over a Go map (node.labels.map(k, k)) would otherwise depend on map
// order, and the FSM must not.
func nodeActivation(node *fsm.Node, inv ledger.Inventory) interpreter.Activation {
	adapter := types.DefaultTypeAdapter
	caps := make(map[ref.Val]ref.Val, len(inv.Capabilities))
	capNames := make([]string, 0, len(inv.Capabilities))
	for _, c := range inv.Capabilities {
		caps[types.String(c.Name)] = types.Int(c.Count)
		capNames = append(capNames, c.Name)
	}
	gpus := make([]ref.Val, len(inv.GPUs))
	for i, g := range inv.GPUs {
		gpus[i] = sortedMap(adapter, map[string]ref.Val{
			"index":    types.Int(g.Index),
			"model":    types.String(g.Model),
			"capacity": types.Double(float64(g.Capacity) / 1000),
		})
	}
	labels := node.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	root := sortedMap(adapter, map[string]ref.Val{
		"id":           types.String(node.ID),
		"pool":         types.String(node.Pool),
		"labels":       orderedMapper{Mapper: types.NewStringStringMap(adapter, labels), keys: slices.Sorted(maps.Keys(labels))},
		"capabilities": orderedMapper{Mapper: types.NewRefValMap(adapter, caps), keys: sortedUnique(capNames)},
		"gpus":         types.NewRefValList(adapter, gpus),
	})
	act, err := interpreter.NewActivation(map[string]any{"node": root})
	if err != nil { // cannot happen for a map input; keep evaluations total
		return interpreter.EmptyActivation()
	}
	return act
}

func sortedMap(adapter types.Adapter, m map[string]ref.Val) traits.Mapper {
	vals := make(map[ref.Val]ref.Val, len(m))
	for k, v := range m {
		vals[types.String(k)] = v
	}
	return orderedMapper{Mapper: types.NewRefValMap(adapter, vals), keys: slices.Sorted(maps.Keys(m))}
}

func sortedUnique(l []string) []string {
	slices.Sort(l)
	return slices.Compact(l)
}

// orderedMapper is a CEL map whose iteration (comprehensions, and so
// anything built from its keys) follows keys, its sorted key list.
type orderedMapper struct {
	traits.Mapper
	keys []string
}

// Iterator implements traits.Iterable.
func (m orderedMapper) Iterator() traits.Iterator {
	return types.NewStringList(types.DefaultTypeAdapter, m.keys).Iterator()
}

// Eval implements fsm.ExprEvaluator: the FSM's plan re-check evaluates a
// constraint on a node with the same compiled program, input and cost limit
// as placement. An expression that does not compile, errors for the node
// (a missing label, the cost limit) or is not a bool is an error.
func (c ExprChecker) Eval(expr string, n *fsm.Node) (bool, error) {
	if n == nil {
		return false, errors.New("no node")
	}
	cache := c.cache
	if cache == nil {
		cache = defaultExprCache
	}
	prg, err := cache.get(expr)
	if err != nil {
		return false, err
	}
	return evalExpr(prg, nodeActivation(n, n.Inventory()))
}
