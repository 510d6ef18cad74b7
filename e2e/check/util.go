package check

import (
	"cmp"
	"slices"

	"github.com/amserver/amserver/e2e/workload"
)

// sortedByCall returns a copy of ops ordered by Call (then ID), so the
// checkers do not depend on the caller's order.
func sortedByCall(ops []workload.Op) []workload.Op {
	out := slices.Clone(ops)
	slices.SortStableFunc(out, func(a, b workload.Op) int {
		return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID))
	})
	return out
}
