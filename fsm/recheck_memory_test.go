package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// memFixture: pool p with nodes n1 and n2 of 4096 MiB each, and bundles x
// (3072 MiB, limit 3500) and y (2048 MiB) waiting.
func memFixture(t *testing.T) *harness {
	h := newHarness(t)
	for _, id := range []string{"n1", "n2"} {
		n := testNode(id, "p", "az1", "c1", 8000, 8)
		n.TotalMemoryMiB = 4096
		h.readyNode(n)
	}
	x := testJob("a", 100, 0)
	x.Requirements.MemoryMiB, x.Requirements.MemoryLimitMiB = 3072, 3500
	y := testJob("a", 100, 0)
	y.Requirements.MemoryMiB = 2048
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("x", "p", x)})
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("y", "p", y)})
	return h
}

func memPlace(bundle, node string, mem int64) *Plan {
	g := ledger.Grant{Capacity: 100, MemoryMiB: mem}
	return &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{upd(bundle, Place{Slot: 0, Job: "a", Node: node, Grant: g})}}}}
}

// TestPlanRecheckMemory: the plan applier refuses a part whose memory
// would over-commit its node or pool, or whose grant holds less memory
// than its job requests, and changes nothing; a fitting part commits, and
// its assignment carries the job's limit for the worker.
func TestPlanRecheckMemory(t *testing.T) {
	cases := []struct {
		name  string
		setup func(h *harness)
		plan  *Plan
		check string
	}{
		{"stale plan over-commits the node", nil, memPlace("y", "n1", 2048), ledger.DimMemory},
		{"grant holds less than the request", nil, memPlace("y", "n2", 0), ledger.DimMemory},
		{"pool memory cap", func(h *harness) {
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p", Caps: ledger.PoolCaps{MaxMemoryMiB: 4096}}})
		}, memPlace("y", "n2", 2048), ledger.DimPoolCaps},
		{"node shrank below the request", func(h *harness) {
			n := testNode("n2", "p", "az1", "c1", 8000, 8)
			n.TotalMemoryMiB = 1024
			h.ok(RegisterNodeType, &RegisterNodeRequest{Node: n})
		}, memPlace("y", "n2", 2048), ledger.DimMemory},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := memFixture(t)
			if pr := h.ok(ApplyPlanType, memPlace("x", "n1", 3072)).Value.(*PlanResult); len(pr.Committed) != 1 {
				t.Fatalf("x did not commit: %+v", pr.Rejected)
			}
			if tc.setup != nil {
				tc.setup(h)
			}
			before := stateHash(t, h.fsm)
			pr := h.ok(ApplyPlanType, tc.plan).Value.(*PlanResult)
			if len(pr.Committed) != 0 || len(pr.Rejected) != 1 || pr.Rejected[0].Check != tc.check {
				t.Fatalf("want the part rejected by %s, got %+v", tc.check, pr)
			}
			if stateHash(t, h.fsm) != before {
				t.Fatal("a rejected part changed state")
			}
			checkInvariants(t, h.fsm)
		})
	}
	h := memFixture(t)
	h.ok(ApplyPlanType, memPlace("x", "n1", 3072))
	if pr := h.ok(ApplyPlanType, memPlace("y", "n2", 2048)).Value.(*PlanResult); len(pr.Committed) != 1 {
		t.Fatalf("a fitting part was rejected: %+v", pr.Rejected)
	}
	st := h.fsm.State()
	if n := st.Node("n1"); n.Usage.MemoryMiB != 3072 {
		t.Fatalf("n1 holds %d MiB, want 3072", n.Usage.MemoryMiB)
	}
	if p := st.Pool("p"); p.Usage.MemoryMiB != 5120 {
		t.Fatalf("pool p holds %d MiB, want 5120", p.Usage.MemoryMiB)
	}
	as := st.BundleAssignments("x")
	if len(as) != 1 || as[0].MemoryLimitMiB != 3500 || as[0].Grant.MemoryMiB != 3072 {
		t.Fatalf("x's assignment: %+v", as)
	}
	// Nor can the pool's memory cap drop below what it holds.
	low := Pool{Name: "p", Caps: ledger.PoolCaps{MaxMemoryMiB: 4096}}
	if res := h.apply(UpsertPoolType, &UpsertPoolRequest{Pool: low}); !errors.Is(res.Err, ErrConflict) ||
		!strings.Contains(res.Err.Error(), "maxMemoryMiB") {
		t.Fatalf("a memory cap below the pool's usage: %v", res.Err)
	}
	// A node cannot re-register with less memory than its reservations hold.
	n := testNode("n1", "p", "az1", "c1", 8000, 8)
	n.TotalMemoryMiB = 2048
	if res := h.apply(RegisterNodeType, &RegisterNodeRequest{Node: n}); !errors.Is(res.Err, ErrConflict) {
		t.Fatalf("shrinking n1 below its reserved memory: %v", res.Err)
	}
	checkInvariants(t, h.fsm)
}
