package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Constraint and affinity expressions are CEL (DESIGN §3.5) over one
// variable, node:
//
//	node.id            string
//	node.pool          string
//	node.labels        map(string, string); the failure-domain keys are "az" and "cloud"
//	node.capabilities  map(string, int): capability name → the node's total count
//	                   (including what running node services provide)
//	node.gpus          list of {index: int, model: string, capacity: double (API units)}
//
// Every expression must be a bool. `x in s` where s is a string is true when
// x is one of the comma-separated items of s, so a label like
// features=st2110,ptp answers `"st2110" in node.labels.features`; on lists and
// maps `in` keeps its CEL meaning (`"nic" in node.capabilities`).
//
// Reading a label the node does not have is an evaluation error, and an
// expression that errors counts as not satisfied (a constraint) or as not
// matching (an affinity); write `!has(node.labels.rack) || node.labels.rack != "r7"`
// to also accept nodes without the label. Expressions whose estimated cost
// is too high (deeply nested comprehensions) are rejected at validation, so
// no submitted expression can stall the leader.

// nodeFields are the fields of node; selecting any other is a compile error,
// which catches typos that would otherwise never match.
var nodeFields = map[string]bool{"id": true, "pool": true, "labels": true, "capabilities": true, "gpus": true}

// maxExprCost bounds an expression's estimated evaluation cost, assuming up
// to maxCollection entries in every map and list of the node (the FSM's
// limit on labels and GPUs) and maxString bytes in a string (label values).
const (
	maxExprCost   = 100_000
	maxCollection = 64
	maxString     = 256
)

var celEnv = sync.OnceValues(newCELEnv)

func newCELEnv() (*cel.Env, error) {
	a, b := cel.TypeParamType("A"), cel.TypeParamType("B")
	// The standard `in` has a singleton binding that cannot take another
	// overload, so it is replaced by one that also knows comma lists.
	noIn := cel.StdLibSubset(&celenv.LibrarySubset{ExcludeFunctions: []*celenv.Function{{Name: operators.In}}})
	return cel.NewCustomEnv(
		cel.StdLib(noIn),
		cel.Variable("node", cel.MapType(cel.StringType, cel.DynType)),
		cel.Function(operators.In,
			cel.Overload("in_list", []*cel.Type{a, cel.ListType(a)}, cel.BoolType),
			cel.Overload("in_map", []*cel.Type{a, cel.MapType(a, b)}, cel.BoolType),
			cel.Overload("in_comma_list", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType),
			cel.SingletonBinaryBinding(inOperator)),
	)
}

func inOperator(lhs, rhs ref.Val) ref.Val {
	if s, ok := rhs.(types.String); ok {
		x, ok := lhs.(types.String)
		if !ok {
			return types.False
		}
		for item := range strings.SplitSeq(string(s), ",") {
			if strings.TrimSpace(item) == string(x) {
				return types.True
			}
		}
		return types.False
	}
	if c, ok := rhs.(traits.Container); ok {
		return c.Contains(lhs)
	}
	return types.NoSuchOverloadErr()
}

// compileExpr parses, type-checks and vets one expression.
func compileExpr(expr string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("expression is empty")
	}
	a, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := a.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("expression must be a bool, is %s", t)
	}
	if err := checkNodeFields(a); err != nil {
		return nil, err
	}
	cost, err := env.EstimateCost(a, sizeEstimator{})
	if err != nil {
		return nil, fmt.Errorf("estimating cost: %w", err)
	}
	if cost.Max > maxExprCost {
		return nil, fmt.Errorf("expression is too expensive (estimated cost %d, at most %d)", cost.Max, maxExprCost)
	}
	// The runtime limit is the estimate's bound: with node inputs within
	// the FSM's limits no expression reaches it, and one that does fails
	// the same way on every replica (node maps iterate in key order).
	return env.Program(a, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(maxExprCost))
}

func checkNodeFields(a *cel.Ast) error {
	var bad string
	visit := ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.SelectKind || bad != "" {
			return
		}
		sel := e.AsSelect()
		if op := sel.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == "node" && !nodeFields[sel.FieldName()] {
			bad = sel.FieldName()
		}
	})
	ast.PreOrderVisit(ast.NavigateAST(a.NativeRep()), visit)
	if bad != "" {
		return fmt.Errorf("node has no field %q (it has id, pool, labels, capabilities, gpus)", bad)
	}
	return nil
}

// sizeEstimator bounds every collection of node at maxCollection entries and
// every string at the label value limit.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if n.Type() != nil && n.Type().IsExactType(cel.StringType) {
		return &checker.SizeEstimate{Min: 0, Max: maxString}
	}
	return &checker.SizeEstimate{Min: 0, Max: maxCollection}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// ExprChecker implements fsm.ExprChecker for the FSM's static validation: an
// expression is valid when it compiles, is a bool, names only fields node
// has, and is cheap enough. The zero value shares a package-wide bounded
// cache; Engine.ExprChecker shares the engine's.
type ExprChecker struct {
	cache *exprCache
}

// Check implements fsm.ExprChecker.
func (c ExprChecker) Check(expr string) error {
	cache := c.cache
	if cache == nil {
		cache = defaultExprCache
	}
	_, err := cache.get(expr)
	return err
}
