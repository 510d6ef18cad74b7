package fsm

import (
	"errors"
	"fmt"
	"slices"

	"github.com/amserver/amserver/internal/plant"
	"github.com/amserver/amserver/ledger"
)

// ExprEvaluator evaluates a constraint on a node for the plan re-check (CEL,
// provided by the scheduler package, with the program, node input and cost
// limit placement uses). It must be deterministic: no clock, no map order.
// An expression that does not compile, fails for the node or is not a bool
// returns an error.
type ExprEvaluator interface {
	Eval(expr string, n *Node) (bool, error)
}

// RecheckError says which hard rule a plan part's placement no longer
// keeps on the state it is applied to (DESIGN §5.3).
type RecheckError struct {
	Check  string // the rule: a feasibility stage's explain key
	Detail string
}

func (e *RecheckError) Error() string { return "re-check " + e.Check + ": " + e.Detail }

// Is makes a failed re-check a conflict with the current state.
func (e *RecheckError) Is(target error) bool { return target == ErrConflict }

func recheckf(check, format string, args ...any) error {
	return &RecheckError{Check: check, Detail: fmt.Sprintf(format, args...)}
}

// placeCheck is one hard rule that a single placement depends on, checked
// against the state the plan is applied to. The node exists, is placeable
// and is in the slot's pool (stagePlace); the grant fits (ledger.Reserve,
// which also holds the pool's caps, memory included).
type placeCheck struct {
	name  string
	check func(t *tx, b *Bundle, job *Job, n *Node, g ledger.Grant) error
}

var placeChecks = []placeCheck{
	{"pool", checkTier},
	{"taints", checkTaints},
	{"runtime", recheckRuntime},
	{"constraints", checkConstraints},
	{"matches", checkMatches},
	{ledger.DimMemory, checkMemoryGrant},
}

// checkMemoryGrant: the grant reserves at least the job's memory request
// (the pool's default layered in). The ledger keeps grants within the
// node's memory; this keeps a plan from placing a job that asks for
// memory with a grant that holds none, which would over-commit the node
// in fact while the ledger looked right.
func checkMemoryGrant(t *tx, b *Bundle, job *Job, n *Node, g ledger.Grant) error {
	want := t.State.Pool(n.Pool).Effective(job.Requirements).MemoryMiB
	if g.MemoryMiB < want {
		return recheckf(ledger.DimMemory, "bundle %s job %s: grant on node %s holds %d MiB of memory, the job requests %d MiB",
			b.ID(), job.Name, n.ID, g.MemoryMiB, want)
	}
	return nil
}

// recheckRuntime: the node may have re-registered without the job's runtime
// since the plan was made.
func recheckRuntime(t *tx, _ *Bundle, job *Job, n *Node, _ ledger.Grant) error {
	if need := JobRuntimeNeed(job, t.TemplateRuntime); !n.RuntimeSet().Fits(need) {
		return recheckf("runtime", "node %s runs %s, not the runtime %s job %s needs", n.ID, n.RuntimeSet(), need, job.Name)
	}
	return nil
}

// recheckPlace runs every placeCheck for job p of b on node n.
func (t *tx) recheckPlace(b *Bundle, p Place, n *Node) error {
	if plant.Active(plant.SkipRecheck) {
		return nil
	}
	job := b.Spec.Job(p.Job)
	if job == nil {
		return fmt.Errorf("%w: bundle %s has no job %s", ErrInvalid, b.ID(), p.Job)
	}
	for _, c := range placeChecks {
		if err := c.check(t, b, job, n, p.Grant); err != nil {
			return err
		}
	}
	return nil
}

// checkTier: a pool with tiers uses only nodes whose cloud is in one.
func checkTier(t *tx, b *Bundle, job *Job, n *Node, _ ledger.Grant) error {
	p := t.State.Pool(n.Pool)
	if p == nil || len(p.Tiers) == 0 {
		return nil
	}
	for _, tier := range p.Tiers {
		if tier.Cloud == n.Cloud() {
			return nil
		}
	}
	return recheckf("pool", "bundle %s job %s: node %s's cloud %q is in no tier of pool %s", b.ID(), job.Name, n.ID, n.Cloud(), p.Name)
}

// checkTaints: the job tolerates every taint of the node.
func checkTaints(_ *tx, b *Bundle, job *Job, n *Node, _ ledger.Grant) error {
	for _, taint := range n.Taints {
		if !slices.Contains(job.Tolerations(), taint) {
			return recheckf("taints", "bundle %s job %s: node %s has taint %q, which the job does not tolerate", b.ID(), job.Name, n.ID, taint)
		}
	}
	return nil
}

// checkConstraints: every constraint of the job holds on the node; one that
// fails to evaluate rejects the part, as it filters the node in placement.
// Without an evaluator (an FSM built for a test) constraints are not checked.
func checkConstraints(t *tx, b *Bundle, job *Job, n *Node, _ ledger.Grant) error {
	if t.eval == nil {
		return nil
	}
	for _, expr := range job.Constraints() {
		ok, err := safeEval(t.eval, expr, n)
		switch {
		case err != nil:
			return recheckf("constraints", "bundle %s job %s: constraint %q on node %s: %v", b.ID(), job.Name, clip(expr), n.ID, err)
		case !ok:
			return recheckf("constraints", "bundle %s job %s: constraint %q does not hold on node %s", b.ID(), job.Name, clip(expr), n.ID)
		}
	}
	return nil
}

// checkMatches: the node still offers what the job's request matched when
// its grant was chosen. The ledger counts capabilities and GPU capacity,
// but a re-registration may keep the counts and change a capability's
// attributes or a GPU's model.
func checkMatches(_ *tx, b *Bundle, job *Job, n *Node, g ledger.Grant) error {
	inv := n.Inventory()
	for _, cr := range job.Requirements.Capabilities {
		i := capabilityIndex(inv.Capabilities, cr.Name)
		if i < 0 {
			return recheckf(ledger.DimCapabilityPrefix+cr.Name, "bundle %s job %s: node %s has no capability %q", b.ID(), job.Name, n.ID, cr.Name)
		}
		for _, k := range sortedKeys(cr.AttributeMatches) {
			if got, ok := inv.Capabilities[i].Attributes[k]; !ok || got != cr.AttributeMatches[k] {
				return recheckf(ledger.DimCapabilityPrefix+cr.Name, "bundle %s job %s: capability %q on node %s has %s=%q, the job needs %q",
					b.ID(), job.Name, cr.Name, n.ID, k, got, cr.AttributeMatches[k])
			}
		}
	}
	model := job.Requirements.GPUModel
	if model == "" {
		return nil
	}
	devices := slices.Clone(g.ExclusiveGPUs)
	if g.GPU != nil {
		devices = append(devices, g.GPU.Index)
	}
	for _, idx := range devices {
		for _, d := range inv.GPUs {
			if d.Index == idx && d.Model != model {
				return recheckf(ledger.DimGPU, "bundle %s job %s: gpu %d on node %s is a %s, the job needs a %s", b.ID(), job.Name, idx, n.ID, d.Model, model)
			}
		}
	}
	return nil
}

// safeEval turns an evaluator panic into an error: every replica panics
// alike, so rejecting the part is deterministic, and Apply must not die.
func safeEval(e ExprEvaluator, expr string, n *Node) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("expression evaluator failed: %v", r)
		}
	}()
	return e.Eval(expr, n)
}

// rejection describes a rejected part; Check names the failed re-check.
func rejection(part int, bundleID string, err error) PartRejection {
	r := PartRejection{Part: part, BundleID: bundleID, Reason: err.Error(), Exhausted: errors.Is(err, ledger.ErrExhausted)}
	var re *RecheckError
	var ex *ledger.ExhaustedError
	switch {
	case errors.As(err, &re):
		r.Check = re.Check
	case errors.As(err, &ex):
		r.Check = ex.Dimension
	}
	return r
}
