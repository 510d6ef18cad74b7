package fsm

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/ledger"
)

// testingT is what test helpers need; both *testing.T and *rapid.T have it.
type testingT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// harness applies commands to an FSM with consecutive raft indexes.
type harness struct {
	t     testingT
	fsm   *FSM
	index uint64
}

func newHarness(t testingT) *harness {
	return &harness{t: t, fsm: New(Config{})}
}

func mustEncode(t testingT, typ MessageType, body any) []byte {
	t.Helper()
	b, err := Encode(typ, body)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

func (h *harness) log(typ MessageType, body any) *raft.Log {
	h.index++
	return &raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: mustEncode(h.t, typ, body)}
}

// apply applies one command and returns its result.
func (h *harness) apply(typ MessageType, body any) *Result {
	h.t.Helper()
	return h.fsm.Apply(h.log(typ, body)).(*Result)
}

// ok applies a command that must succeed.
func (h *harness) ok(typ MessageType, body any) *Result {
	h.t.Helper()
	res := h.apply(typ, body)
	if res.Err != nil {
		h.t.Fatalf("%s: unexpected error: %v", typ, res.Err)
	}
	return res
}

// stateHash digests every table's rows; two FSMs with equal hashes hold
// identical state.
func stateHash(t testingT, f *FSM) string {
	t.Helper()
	d, err := f.State().Digest()
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return d
}

func testNode(id, pool, az, cloud string, capacity int64, cores int) Node {
	return Node{
		ID: id, Pool: pool, TotalCapacity: capacity, UtilizationCap: 1000, TotalCores: cores,
		Labels: map[string]string{"az": az, "cloud": cloud},
		GPUs:   []ledger.GPU{{Index: 0, Model: "t4", Capacity: 1000}},
		Capabilities: []ledger.Capability{
			{Name: "nic", Count: 2, Attributes: map[string]string{"speed": "25g"}},
		},
	}
}

// readyNode registers a node and marks it ready, as the leader would.
func (h *harness) readyNode(n Node) {
	h.t.Helper()
	h.ok(RegisterNodeType, &RegisterNodeRequest{Node: n})
	h.ok(NodeStatusType, &NodeStatusRequest{NodeID: n.ID, Status: NodeReady})
}

func testBundle(id, pool string, jobs ...Job) BundleSpec {
	return BundleSpec{ID: id, Pool: pool, Jobs: jobs}
}

func testJob(name string, capacity int64, cores int) Job {
	return Job{Name: name, Requirements: ledger.Request{Capacity: capacity, Cores: cores}}
}

// placeAll builds a plan part placing every job of a slot on one node with
// grants computed by the ledger against the FSM's current state.
func (h *harness) placeAll(bundleID string, slot int, node string) PlanPart {
	h.t.Helper()
	st := h.fsm.State()
	b, n := st.Bundle(bundleID), st.Node(node)
	if b == nil || n == nil {
		h.t.Fatalf("placeAll: bundle %s or node %s missing", bundleID, node)
	}
	used := n.Usage
	u := BundleUpdate{BundleID: bundleID}
	for _, j := range b.Spec.Jobs {
		g, err := ledger.Fit(n.Inventory(), used, j.Requirements)
		if err != nil {
			h.t.Fatalf("placeAll: %s on %s: %v", j.Name, node, err)
		}
		used = used.Add(g)
		u.Place = append(u.Place, Place{Slot: slot, Job: j.Name, Node: node, Grant: g})
	}
	return PlanPart{Updates: []BundleUpdate{u}}
}

// checkInvariants verifies §2.4 on the FSM's current state by recomputing
// every node's and pool's usage from the reservations.
func checkInvariants(t testingT, f *FSM) {
	t.Helper()
	st := f.State()
	want := ledger.NewMemStore()
	for _, n := range st.Nodes("") {
		want.AddNode(n.ID, n.Inventory())
	}
	for _, p := range st.Pools() {
		want.SetPoolCaps(p.Name, p.Caps)
		want.SetPoolGroup(p.Name, p.CapGroup)
	}
	for _, sc := range st.CapScopes() {
		want.SetPoolCaps(sc.Name, sc.Caps)
	}
	for _, r := range st.Reservations() {
		if err := ledger.Reserve(want, r); err != nil {
			t.Fatalf("invariant: reservation %s does not fit when replayed: %v", r.Key, err)
		}
	}
	for _, n := range st.Nodes("") {
		_, used, _ := want.Node(n.ID)
		if !usageEqual(used, n.Usage) {
			t.Fatalf("invariant: node %s usage %+v, recomputed %+v", n.ID, n.Usage, used)
		}
		if err := ledger.Fits(n.Inventory(), n.Usage); err != nil {
			t.Fatalf("invariant: node %s over-committed: %v", n.ID, err)
		}
	}
	for _, p := range st.Pools() {
		_, used := want.Pool(p.Name)
		if used != p.Usage {
			t.Fatalf("invariant: pool %s usage %+v, recomputed %+v", p.Name, p.Usage, used)
		}
	}
	checkScopeInvariants(t, st, want)
	checkBundlesMatchLedger(t, st)
	checkCounts(t, st)
}

// checkCounts verifies the gauges' counts (CountBundles, CountDegraded)
// against a walk of every bundle, for every state and code seen and for
// ones no bundle has.
func checkCounts(t testingT, st *State) {
	t.Helper()
	states, codes := map[string]int{StatePending: 0, StateDegraded: 0}, map[string]int{DegradeNoBackup: 0}
	for b := range st.BundlesAfter("", "") {
		states[b.State]++
		for _, code := range degradationCodes(b) {
			codes[code]++
		}
	}
	for state, want := range states {
		if got := st.CountBundles(state); got != want {
			t.Fatalf("CountBundles(%q) = %d, %d bundles are in it", state, got, want)
		}
	}
	for code, want := range codes {
		if got := st.CountDegraded(code); got != want {
			t.Fatalf("CountDegraded(%q) = %d, %d bundles carry it", code, got, want)
		}
	}
}

// checkBundlesMatchLedger verifies that every placed job holds exactly the
// reservation its bundle records, and no reservation is orphaned.
func checkBundlesMatchLedger(t testingT, st *State) {
	t.Helper()
	held := map[string]bool{}
	for _, b := range st.Bundles("", "") {
		for _, r := range b.Replicas {
			for _, j := range r.Jobs {
				if !j.Placed() {
					continue
				}
				k := ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: j.Name}
				res, ok := st.Reservation(k)
				if !ok || res.Node != j.NodeID || !ledger.GrantEqual(res.Grant, j.Grant) {
					t.Fatalf("invariant: bundle %s job %s slot %d placed on %s without its reservation", b.ID(), j.Name, r.Slot, j.NodeID)
				}
				held[k.String()] = true
			}
		}
	}
	for _, r := range st.Reservations() {
		if !held[r.Key.String()] && len(r.Key.Bundle) > 0 && r.Key.Bundle[0] != '~' {
			t.Fatalf("invariant: orphaned reservation %s", r.Key)
		}
	}
}

func usageEqual(a, b ledger.Usage) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// restoreInto snapshots from and restores the snapshot into into, which
// may hold state of its own (a restore must replace it).
func restoreInto(t testingT, from, into *FSM) {
	t.Helper()
	if err := into.Restore(io.NopCloser(snapshotBytes(t, from))); err != nil {
		t.Fatalf("restore: %v", err)
	}
}

// snapshotBytes is f's snapshot as a restore reads it.
func snapshotBytes(t testingT, f *FSM) *bytes.Buffer {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var buf bytes.Buffer
	if err := PersistTo(snap, &buf); err != nil {
		t.Fatalf("persist: %v", err)
	}
	return &buf
}

// checkScopeInvariants: every cluster and cap group scope holds what the
// replayed reservations of its pools hold (no more rows, no fewer), within
// its caps (the replay's Reserve already refused anything over them).
func checkScopeInvariants(t testingT, st *State, want *ledger.MemStore) {
	t.Helper()
	names := want.Scopes()
	for _, sc := range st.CapScopes() {
		names = append(names, sc.Name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		_, used := want.Pool(name)
		row := st.CapScopeRow(name)
		switch {
		case row == nil && used != (ledger.PoolUsage{}):
			t.Fatalf("invariant: scope %s has no row, recomputed usage %+v", name, used)
		case row != nil && row.Usage != used:
			t.Fatalf("invariant: scope %s usage %+v, recomputed %+v", name, row.Usage, used)
		case row != nil && row.Caps == (ledger.PoolCaps{}) && row.Usage == (ledger.PoolUsage{}):
			t.Fatalf("invariant: scope %s has an empty row", name)
		case row != nil && usageOver(row.Caps, row.Usage) != "":
			t.Fatalf("invariant: scope %s usage %+v over caps %+v", name, row.Usage, row.Caps)
		}
	}
}
