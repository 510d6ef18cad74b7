package httpapi

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// A list's ?filter= is a CEL expression over each entry's API form, the
// JSON a GET by id answers, bound as the list's variable (bundle, node,
// pool, service, token): `bundle.priority == "gold" && bundle.state ==
// "placed"`, `node.labels["az"] == "az-1"`. Numbers are JSON's doubles;
// CEL compares them with int literals as numbers. Reading a field an entry
// lacks is an error for that entry, which then does not match (write
// `has(node.labels.rack) && ...`). The expression is compiled once per
// request, and its evaluation is cost-limited per entry.

const (
	// maxFilterLen bounds the expression (it travels in the URL).
	maxFilterLen = 4096
	// filterCostLimit bounds one evaluation: a few hundred for comparisons,
	// a walk over a bundle's jobs is a few thousand.
	filterCostLimit = 100_000
	// filterInterrupt is how many comprehension steps pass between checks
	// of the request's context.
	filterInterrupt = 100
)

// errFilterCost reports an evaluation stopped by the cost limit.
var errFilterCost = errors.New("filter is too expensive for one entry")

// filterEnvs holds one environment per variable name; they are immutable
// and safe for concurrent use.
var filterEnvs sync.Map // string → *cel.Env

func filterEnv(name string) (*cel.Env, error) {
	if env, ok := filterEnvs.Load(name); ok {
		return env.(*cel.Env), nil
	}
	env, err := cel.NewEnv(cel.Variable(name, cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true))
	if err != nil {
		return nil, fmt.Errorf("filter environment: %w", err)
	}
	actual, _ := filterEnvs.LoadOrStore(name, env)
	return actual.(*cel.Env), nil
}

// listFilter is one request's compiled filter.
type listFilter struct {
	name string
	prg  cel.Program
}

// compileFilter compiles expr for the variable name. Every problem is a
// 400 with CEL's own words.
func compileFilter(name, expr string) (*listFilter, error) {
	if len(expr) > maxFilterLen {
		return nil, badRequest("query parameter filter is %d bytes, at most %d allowed", len(expr), maxFilterLen)
	}
	env, err := filterEnv(name)
	if err != nil {
		return nil, err
	}
	a, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, badRequest("query parameter filter=%q does not compile: %v", expr, iss.Err())
	}
	// Fields of the entry are dyn, so `node.cordoned` is a dyn that proves
	// bool only when it runs; anything surely not a bool is refused now.
	if t := a.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, badRequest("query parameter filter=%q must return a bool, it returns %s", expr, t)
	}
	prg, err := env.Program(a, cel.CostLimit(filterCostLimit), cel.InterruptCheckFrequency(filterInterrupt),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, badRequest("query parameter filter=%q does not compile: %v", expr, err)
	}
	return &listFilter{name: name, prg: prg}, nil
}

// match evaluates the filter on v's JSON form. An entry the expression
// fails on (a missing field or key) does not match; a result that is not a
// bool, or an evaluation over the cost limit, fails the request.
func (f *listFilter) match(ctx context.Context, v any) (bool, error) {
	out, _, err := f.prg.ContextEval(ctx, map[string]any{f.name: celValue(reflect.ValueOf(v))})
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case err != nil && isCostError(err):
		return false, badRequest("%v (at most %d per entry)", errFilterCost, filterCostLimit)
	case err != nil:
		return false, nil
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, badRequest("filter must return a bool, it returned %s for a %s", out.Type().TypeName(), f.name)
	}
	return bool(b), nil
}

func isCostError(err error) bool {
	var ce interpreter.EvalCancelledError
	return errors.As(err, &ce) && ce.Cause == interpreter.CostLimitExceeded
}
