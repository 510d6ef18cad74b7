package scheduler

import (
	"sync"

	"github.com/google/cel-go/cel"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// Options tune the engine; zero fields take the defaults.
type Options struct {
	// SearchBudget bounds the node evaluations of one replica search
	// (default 50,000); it is raised to 4 × the pool's node count so a group
	// is always scanned to the end before the search gives up.
	SearchBudget int
	// SampleFloor is the least number of feasible nodes a scan batch
	// collects before choosing (default 8); the batch size is
	// max(2·⌈log2 n⌉, SampleFloor) for a candidate list of n nodes.
	SampleFloor int
	// ExhaustiveBelow: candidate lists up to this length are scanned whole
	// and the best node of all is chosen (default 32).
	ExhaustiveBelow int
	// DisableSampling always scans every candidate.
	DisableSampling bool
	// ExprCacheSize bounds the compiled CEL expressions kept (default 4096).
	ExprCacheSize int
}

const (
	defaultSearchBudget    = 50_000
	defaultSampleFloor     = 8
	defaultExhaustiveBelow = 32
)

// Engine holds what outlives a state snapshot: options and the compiled
// expression cache. It is safe for concurrent use.
type Engine struct {
	opts  Options
	exprs *exprCache

	mu   sync.Mutex
	last *index // the latest snapshot's index, refreshed by the next
}

// NewEngine returns an engine.
func NewEngine(opts Options) *Engine {
	if opts.SearchBudget <= 0 {
		opts.SearchBudget = defaultSearchBudget
	}
	if opts.SampleFloor <= 0 {
		opts.SampleFloor = defaultSampleFloor
	}
	if opts.ExhaustiveBelow <= 0 {
		opts.ExhaustiveBelow = defaultExhaustiveBelow
	}
	return &Engine{opts: opts, exprs: newExprCache(opts.ExprCacheSize)}
}

// ExprChecker returns an fsm.ExprChecker sharing the engine's cache.
func (e *Engine) ExprChecker() ExprChecker { return ExprChecker{cache: e.exprs} }

// Snapshot indexes a state view for placement. Take one per state snapshot
// and place every bundle of a batch with it; each decision then looks only
// at candidate lists. The index is refreshed from the engine's previous one
// when only usage changed (refreshIndex), else built in O(nodes). A
// Snapshot is not safe for concurrent use (it memoises expression results);
// the engine is, and snapshots may be used concurrently with each other.
func (e *Engine) Snapshot(v View) *Snapshot {
	e.mu.Lock()
	idx := refreshIndex(e.last, v)
	e.last = idx
	e.mu.Unlock()
	return &Snapshot{e: e, idx: idx, memo: map[string]*exprMemo{}}
}

// Snapshot is an indexed state view.
type Snapshot struct {
	e    *Engine
	idx  *index
	memo map[string]*exprMemo
}

// exprMemo is one expression compiled, with its result per node position
// (0 unknown, 1 true, 2 false): node inputs do not change within a
// snapshot, so each expression runs at most once per node.
type exprMemo struct {
	prg cel.Program
	err error
	res []int8
}

// Store returns the snapshot as a read-only ledger store; place against a
// ledger.Overlay on top of it.
func (sn *Snapshot) Store() ledger.Store { return viewStore{idx: sn.idx} }

// View returns the view the snapshot indexes.
func (sn *Snapshot) View() View { return sn.idx.view }

func (sn *Snapshot) expr(expr string) *exprMemo {
	if m, ok := sn.memo[expr]; ok {
		return m
	}
	prg, err := sn.e.exprs.get(expr)
	m := &exprMemo{prg: prg, err: err}
	sn.memo[expr] = m
	return m
}

// holds evaluates a compiled expression on a node, memoised.
func (sn *Snapshot) holds(m *exprMemo, n *nodeInfo) bool {
	if m.res == nil {
		m.res = make([]int8, len(sn.idx.nodes))
	}
	switch m.res[n.pos] {
	case 1:
		return true
	case 2:
		return false
	}
	ok := evalBool(m.prg, n.activation())
	m.res[n.pos] = 2
	if ok {
		m.res[n.pos] = 1
	}
	return ok
}

// DryRun places spec as a new bundle on a fresh snapshot of st (see
// Snapshot.DryRun). It has the shape of the agent's Planner; the error is
// always nil, since an unplaceable bundle is a result, explained, not a
// failure.
func (e *Engine) DryRun(st *fsm.State, spec fsm.BundleSpec, seed uint64) (*fsm.Bundle, *fsm.Explain, error) {
	b, ex := e.Snapshot(st).DryRun(spec, seed)
	return b, ex, nil
}

// Plan is Snapshot.Plan on a fresh snapshot of st: DryRun with the
// evictions a preemption would make.
func (e *Engine) Plan(st *fsm.State, spec fsm.BundleSpec, seed uint64) DryRunResult {
	return e.Snapshot(st).Plan(spec, seed)
}
