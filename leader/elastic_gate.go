package leader

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// maxGateDetail keeps a gating explanation well inside what the FSM takes
// for a blocked spawn's detail (1024 bytes).
const maxGateDetail = 900

// gateDetail says why no instance type can take the bundle: the first job
// that no type of the pools admits by its labels and taints, with what
// keeps each type from it (a taint the job does not tolerate, a constraint
// that does not hold on the type's labels); else that size or the rules
// between jobs are why, naming the types that labels or taints ruled out.
func (pl *planner) gateDetail(b *fsm.Bundle, pools []string) string {
	types := pl.typesBySize(pools)
	where := strings.Join(pools, ", ")
	if len(types) == 0 {
		return fmt.Sprintf("pool %s has no instance types", where)
	}
	var gated []string
	for i := range b.Spec.Jobs {
		job := &b.Spec.Jobs[i]
		var why []string
		for _, pt := range types {
			if reason := pl.typeRejects(job, pt); reason != "" {
				why = append(why, fmt.Sprintf("%s: %s", pt.it.Name, reason))
			}
		}
		if len(why) == len(types) {
			return clipDetail(fmt.Sprintf("job %s fits no instance type of pool %s (%s)", job.Name, where, strings.Join(why, "; ")))
		}
		for _, w := range why {
			gated = append(gated, w+" for job "+job.Name)
		}
	}
	detail := fmt.Sprintf("no %d nodes of the instance types of pool %s would let the bundle fit", maxNodesPerBundle, where)
	if len(gated) > 0 {
		detail += " (ruled out: " + strings.Join(gated, "; ") + ")"
	}
	return clipDetail(detail)
}

// typeRejects says why a node of the type could never hold the job because
// of its labels or taints, or "" when they admit it.
func (pl *planner) typeRejects(job *fsm.Job, pt poolType) string {
	for _, taint := range pt.it.Taints {
		if !slices.Contains(job.Tolerations(), taint) {
			return fmt.Sprintf("taint %q is not tolerated", taint)
		}
	}
	n := virtualNode("~gate", pt.pool, pt.it)
	for _, expr := range job.Constraints() {
		ok, err := pl.engine.ExprChecker().Eval(expr, n)
		switch {
		case err != nil:
			return fmt.Sprintf("constraint %q fails on its labels: %v", expr, err)
		case !ok:
			return fmt.Sprintf("constraint %q does not hold on its labels", expr)
		}
	}
	return ""
}

func clipDetail(s string) string {
	if len(s) <= maxGateDetail {
		return s
	}
	cut := maxGateDetail - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// scopeCapped names the cluster or cap group cap that the bundle's jobs
// would exceed in one of the pools, whatever nodes arrive: provisioning
// cannot help, and the bundle's explain should say which cap stops it
// rather than blame the instance types.
func (pl *planner) scopeCapped(b *fsm.Bundle, pools []string) (stage, detail string) {
	for _, name := range pools {
		p := pl.pools[name]
		var need ledger.Grant
		for i := range b.Spec.Jobs {
			r := p.Effective(b.Spec.Jobs[i].Requirements)
			need.Capacity += r.Capacity
			need.MemoryMiB += r.MemoryMiB
			need.Cores = append(need.Cores, make([]int, r.Cores)...)
		}
		for _, sc := range ledger.ScopesOf(p.CapGroup) {
			row := pl.st.CapScopeRow(sc)
			if row == nil {
				continue
			}
			var ex *ledger.ExhaustedError
			if err := ledger.CheckScope(sc, row.Caps, row.Usage, need); errors.As(err, &ex) {
				return ex.Dimension, ex.Detail
			}
		}
	}
	return "", ""
}
