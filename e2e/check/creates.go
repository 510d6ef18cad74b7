package check

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

// CreatePrefix starts the id of every bundle the workload creates.
const CreatePrefix = "c-"

// UniqueCreates checks the creates against the final bundle list (from a
// linearizable read after the run): every acknowledged create is present
// exactly once, a create that failed definitely (noLeader, 4xx) is absent,
// no bundle id appears twice, and no "c-" bundle exists that no create
// attempted (a phantom). An unknown create may or may not be present.
func UniqueCreates(ops []workload.Op, final []api.Bundle) Result {
	c := newCollector("unique-creates")
	count := map[string]int{}
	for _, b := range final {
		count[b.ID]++
	}
	for _, id := range slices.Sorted(maps.Keys(count)) {
		if n := count[id]; n > 1 {
			c.addf("bundle %s appears %d times in the final state", id, n)
		}
	}
	outcomes := map[string][]workload.Op{}
	for _, op := range ops {
		if op.Kind != workload.KindCreate {
			continue
		}
		c.checked++
		outcomes[op.Key] = append(outcomes[op.Key], op)
	}
	for _, id := range slices.Sorted(maps.Keys(outcomes)) {
		checkCreate(c, id, outcomes[id], count[id])
	}
	for _, id := range slices.Sorted(maps.Keys(count)) {
		if strings.HasPrefix(id, CreatePrefix) && outcomes[id] == nil {
			c.addf("phantom bundle %s: present in the final state, never created", id)
		}
	}
	return c.result()
}

// checkCreate judges one id's creates. Several creates of one id (a
// retrying client) are allowed: the id must exist if any was acknowledged,
// and must not if every attempt failed definitely.
func checkCreate(c *collector, id string, list []workload.Op, present int) {
	acked, allFailed := false, true
	for _, op := range list {
		acked = acked || op.Outcome == workload.OK
		allFailed = allFailed && op.Outcome == workload.Fail
	}
	switch {
	case acked && present == 0:
		c.kindf(KindLostAck, "acknowledged create %s (op %d) is missing from the final state", id, list[0].ID)
	case allFailed && present > 0:
		c.addf("create %s failed definitely (op %d, %s) but the bundle exists", id, list[0].ID, list[0].Code)
	}
}

// MonotonicIndex checks that, per process, the X-Amserver-Index of
// successive ok reads never decreases: a client must never see the
// cluster go back in time.
func MonotonicIndex(ops []workload.Op) Result {
	c := newCollector("monotonic-index")
	last := map[int]workload.Op{}
	for _, op := range sortedByCall(ops) {
		if op.Kind != workload.KindRead || op.Outcome != workload.OK {
			continue
		}
		c.checked++
		if prev, ok := last[op.Process]; ok && op.Index < prev.Index {
			c.addf("process %d: read op %d (server %s) has index %d after op %d (server %s) had %d",
				op.Process, op.ID, op.Server, op.Index, prev.ID, prev.Server, prev.Index)
		}
		last[op.Process] = op
	}
	return c.result()
}

// sortedByCall returns a copy of ops ordered by Call (then ID), so the
// checkers do not depend on the caller's order.
func sortedByCall(ops []workload.Op) []workload.Op {
	out := slices.Clone(ops)
	slices.SortStableFunc(out, func(a, b workload.Op) int {
		return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.ID, b.ID))
	})
	return out
}
