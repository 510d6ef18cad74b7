package fsm

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// capsWorld: pools a and b in cap group g, pool c alone, one 8-unit node
// each, and bundle a1 (2 units) placed in a and c1 (1 unit) in c.
func capsWorld(t *testing.T) *harness {
	h := newHarness(t)
	for _, p := range []Pool{{Name: "a", CapGroup: "g"}, {Name: "b", CapGroup: "g"}, {Name: "c"}} {
		h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: p})
		h.readyNode(testNode("n-"+p.Name, p.Name, "az1", "c1", 8000, 8))
	}
	for _, b := range []struct {
		id, pool string
		capacity int64
	}{{"a1", "a", 2000}, {"c1", "c", 1000}} {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(b.id, b.pool, testJob("j", b.capacity, 0))})
		h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll(b.id, 0, "n-"+b.pool)}})
	}
	checkInvariants(t, h.fsm)
	return h
}

func usageOf(h *harness, scope string) ledger.PoolUsage {
	if row := h.fsm.State().CapScopeRow(scope); row != nil {
		return row.Usage
	}
	return ledger.PoolUsage{}
}

// TestCapScopesTrackUsage: the cluster holds every pool's usage, a group
// its pools', without caps ever being set.
func TestCapScopesTrackUsage(t *testing.T) {
	h := capsWorld(t)
	if got := usageOf(h, ledger.ClusterScope); got.Capacity != 3000 {
		t.Fatalf("cluster usage %+v, want 3000", got)
	}
	if got := usageOf(h, ledger.GroupScope("g")); got.Capacity != 2000 {
		t.Fatalf("group g usage %+v, want 2000", got)
	}
}

// TestSetCaps: what PUT /v1/caps may set, and what it refuses without
// changing anything.
func TestSetCaps(t *testing.T) {
	cases := []struct {
		name    string
		caps    ClusterCaps
		wantErr error
		text    string
	}{
		{"cluster and group caps above usage", ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 3000, MaxCores: 4},
			Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 2000}, "empty": {MaxCores: 1}}}, nil, ""},
		{"no caps at all", ClusterCaps{}, nil, ""},
		// Groups sorted after one with a memory cap keep their own (none):
		// the decoder must not carry a field from one group to the next.
		{"memory caps in one group only", ClusterCaps{Caps: ledger.PoolCaps{MaxMemoryMiB: 1 << 20},
			Groups: map[string]ledger.PoolCaps{"a": {MaxMemoryMiB: 4096}, "b": {MaxCores: 1}, "c": {MaxCapacity: 1}}}, nil, ""},
		{"cluster below usage", ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 2999}}, ErrConflict, "the cluster already holds more than the new maxCapacity cap"},
		{"group below usage", ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 1000}}}, ErrConflict, "cap group g already holds"},
		{"negative", ClusterCaps{Caps: ledger.PoolCaps{MaxCores: -1}}, ErrInvalid, "cluster caps must be >= 0"},
		{"absurd", ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: maxPoolQuantity + 1}}, ErrInvalid, "at most"},
		{"bad group name", ClusterCaps{Groups: map[string]ledger.PoolCaps{"Not A Name": {MaxCores: 1}}}, ErrInvalid, "cap group name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := capsWorld(t)
			before := stateHash(t, h.fsm)
			res := h.apply(SetCapsType, &SetCapsRequest{Caps: tc.caps})
			if tc.wantErr != nil {
				if !errors.Is(res.Err, tc.wantErr) || !strings.Contains(res.Err.Error(), tc.text) {
					t.Fatalf("err %v, want %v containing %q", res.Err, tc.wantErr, tc.text)
				}
				if stateHash(t, h.fsm) != before {
					t.Fatal("a refused SetCaps changed the state")
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			got := h.fsm.State().ClusterCaps()
			if got.Caps != tc.caps.Caps || len(got.Groups) != len(tc.caps.Groups) {
				t.Fatalf("caps read back %+v, want %+v", got, tc.caps)
			}
			for name, c := range tc.caps.Groups {
				if got.Groups[name] != c {
					t.Fatalf("group %s caps %+v, want %+v", name, got.Groups[name], c)
				}
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestCapsRefusePlans: a placement beyond the cluster's or a group's caps
// is refused by the FSM's re-check, whichever pool it is in, naming the cap.
func TestCapsRefusePlans(t *testing.T) {
	cases := []struct {
		name     string
		caps     ClusterCaps
		pool     string
		capacity int64
		refused  string // "" = placed
	}{
		{"within the cluster cap", ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 4000}}, "c", 1000, ""},
		{"beyond the cluster cap from an uncapped pool", ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 4000}}, "c", 1001, "clusterCaps"},
		{"beyond the group cap", ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 3000}}}, "b", 1001, "cap group g capacity"},
		{"the group cap leaves other pools alone", ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 3000}}}, "c", 5000, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := capsWorld(t)
			h.ok(SetCapsType, &SetCapsRequest{Caps: tc.caps})
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("x", tc.pool, testJob("j", tc.capacity, 0))})
			pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("x", 0, "n-"+tc.pool)}}).Value.(*PlanResult)
			switch {
			case tc.refused == "" && len(pr.Rejected) != 0:
				t.Fatalf("refused: %+v", pr.Rejected)
			case tc.refused != "" && (len(pr.Rejected) != 1 || !strings.Contains(pr.Rejected[0].Reason, tc.refused)):
				t.Fatalf("rejections %+v, want one naming %q", pr.Rejected, tc.refused)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestCapGroupMembership: a pool moving between groups takes its usage
// along; a move the new group's caps cannot hold is refused.
func TestCapGroupMembership(t *testing.T) {
	h := capsWorld(t)
	h.ok(SetCapsType, &SetCapsRequest{Caps: ClusterCaps{Groups: map[string]ledger.PoolCaps{"h": {MaxCapacity: 1500}}}})
	before := stateHash(t, h.fsm)
	res := h.apply(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "a", CapGroup: "h"}})
	if !errors.Is(res.Err, ErrConflict) || !strings.Contains(res.Err.Error(), "cap group h") || stateHash(t, h.fsm) != before {
		t.Fatalf("moving 2 units into a group capped at 1.5: %v", res.Err)
	}
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "c", CapGroup: "h"}})
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "a"}})
	if g, hh := usageOf(h, ledger.GroupScope("g")), usageOf(h, ledger.GroupScope("h")); g.Capacity != 0 || hh.Capacity != 1000 {
		t.Fatalf("group usage after the moves: g %+v, h %+v", g, hh)
	}
	if h.fsm.State().CapScopeRow(ledger.GroupScope("g")) != nil {
		t.Fatal("an uncapped group without usage keeps a row")
	}
	if res := h.apply(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "a", CapGroup: "Bad Name"}}); !errors.Is(res.Err, ErrInvalid) {
		t.Fatalf("a bad capGroup: %v", res.Err)
	}
	checkInvariants(t, h.fsm)
}

// TestCapsSnapshot: caps travel in section 20 and usage is rebuilt from the
// pools, also for a snapshot whose caps rows were lost (an older server's).
func TestCapsSnapshot(t *testing.T) {
	h := capsWorld(t)
	h.ok(SetCapsType, &SetCapsRequest{Caps: ClusterCaps{Caps: ledger.PoolCaps{MaxCores: 6},
		Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 5000}}}})
	want := stateHash(t, h.fsm)
	var buf bytes.Buffer
	snap, err := h.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := PersistTo(snap, &buf); err != nil {
		t.Fatal(err)
	}
	other := capsWorld(t).fsm // a non-empty FSM: the restore replaces it
	if err := other.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if stateHash(t, other) != want || other.State().ClusterCaps().Caps.MaxCores != 6 {
		t.Fatal("restore changed the caps")
	}
	checkInvariants(t, other)

	// Without the caps rows, usage comes back from the pools.
	txn := h.fsm.db.Txn(true)
	for _, row := range all[CapScope](txn, tableCaps, "id") {
		if err := txn.Delete(tableCaps, row); err != nil {
			t.Fatal(err)
		}
	}
	txn.Commit()
	buf.Reset()
	if err := WriteSnapshot(&buf, h.fsm.db, 99); err != nil {
		t.Fatal(err)
	}
	if err := other.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := other.State().CapScopeRow(ledger.ClusterScope); got == nil || got.Usage.Capacity != 3000 {
		t.Fatalf("cluster usage rebuilt as %+v, want 3000", got)
	}
	checkInvariants(t, other)
}

// TestTightestCapsBoundValidation: static validation bounds one job by the
// lowest cap among the pool's, its group's and the cluster's.
func TestTightestCapsBoundValidation(t *testing.T) {
	cases := []struct {
		name     string
		pool     Pool
		caps     ClusterCaps
		want     ledger.PoolCaps
		capacity int64
		warn     bool
	}{
		{"none", Pool{Name: "a", CapGroup: "g"}, ClusterCaps{}, ledger.PoolCaps{}, 7000, false},
		{"the group's", Pool{Name: "a", CapGroup: "g"}, ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 5000}}},
			ledger.PoolCaps{MaxCapacity: 5000}, 6000, true},
		{"the cluster's under the pool's", Pool{Name: "a", CapGroup: "g", Caps: ledger.PoolCaps{MaxCapacity: 7000, MaxCores: 4}},
			ClusterCaps{Caps: ledger.PoolCaps{MaxCapacity: 6000, MaxCores: 8}}, ledger.PoolCaps{MaxCapacity: 6000, MaxCores: 4}, 6000, false},
		{"another group's do not count", Pool{Name: "c"}, ClusterCaps{Groups: map[string]ledger.PoolCaps{"g": {MaxCapacity: 5000}}},
			ledger.PoolCaps{}, 6000, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := capsWorld(t)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: tc.pool})
			h.ok(SetCapsType, &SetCapsRequest{Caps: tc.caps})
			st := h.fsm.State()
			if got := st.TightestCaps(st.Pool(tc.pool.Name)); got != tc.want {
				t.Fatalf("TightestCaps = %+v, want %+v", got, tc.want)
			}
			spec := testBundle("v", tc.pool.Name, testJob("j", tc.capacity, 0))
			Normalize(&spec)
			got := Validate(&spec, st, nil)
			warned := slices.ContainsFunc(got.Warnings, func(f Finding) bool { return f.Code == CodeUnsatisfiableCapacity })
			if warned != tc.warn {
				t.Fatalf("warnings %+v, want unsatisfiableCapacity %v", got.Warnings, tc.warn)
			}
		})
	}
}
