package fsm

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/amserver/amserver/internal/rowstore"
	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/amserver/amserver/ledger"
	"github.com/amserver/amserver/snapshot"
)

// compatFixture is a state with placed bundles, a backup, a deleting bundle
// and a node service holding a reservation.
func compatFixture(t *testing.T) *harness {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	h.readyNode(testNode("n2", "p", "az2", "c2", 8000, 8))
	svc := NodeService{ID: "ptp", Pools: []string{"p"}, Consumes: []ledger.CapabilityRequest{{Name: "nic", Count: 1}}}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{
		{ServiceID: "ptp", Node: "n1", Grant: ledger.Grant{Capabilities: []ledger.CapabilityCount{{Name: "nic", Count: 1}}}},
	}}}})
	for _, id := range []string{"b1", "b2", "b3"} {
		spec := testBundle(id, "p", testJob("enc", 1000, 1), testJob("mux", 500, 0))
		if id == "b2" {
			spec.Resilience = &Resilience{SameNode: Forbid}
		}
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
		h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll(id, 0, "n1")}})
	}
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b2", 1, "n2")}})
	h.ok(DeleteBundleType, &DeleteBundleRequest{ID: "b3"})
	checkInvariants(t, h.fsm)
	return h
}

// writeLegacySnapshot writes the state as servers before derived bundle
// reservations did: section 4 with every reservation, no section 10.
func writeLegacySnapshot(t *testing.T, f *FSM) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw, err := snapshot.NewWriter(&buf, snapshot.Header{Index: f.applied.Load()})
	if err != nil {
		t.Fatal(err)
	}
	st := f.State()
	enc := func(v any) {
		var rec bytes.Buffer
		if err := codec.NewEncoder(&rec, msgpackHandle).Encode(v); err != nil {
			t.Fatal(err)
		}
		if err := sw.Record(rec.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	legacy := []struct {
		kind  uint8
		table string
	}{{1, tableNodes}, {2, tablePools}, {3, tableBundles}, {4, tableReservations}, {5, tableAssignments}, {6, tableServices}, {7, tableEvents}, {8, tableMeta}, {9, tableIndex}}
	for _, sec := range legacy {
		if err := sw.BeginSection(sec.kind, sec.table); err != nil {
			t.Fatal(err)
		}
		if sec.table == tableReservations {
			for _, r := range st.Reservations() {
				enc(&reservationRow{ID: r.Key.String(), BundleID: r.Key.Bundle, NodeID: r.Node, Reservation: r})
			}
			continue
		}
		it, err := st.txn.All(sec.table, "id")
		if err != nil {
			t.Fatal(err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			enc(raw)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRestoreLegacySnapshot: a snapshot that stored every reservation still
// restores to exactly the same state.
func TestRestoreLegacySnapshot(t *testing.T) {
	h := compatFixture(t)
	want := stateHash(t, h.fsm)
	data := writeLegacySnapshot(t, h.fsm)
	other := New(Config{})
	if err := other.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if got := stateHash(t, other); got != want {
		t.Fatal("legacy snapshot restored to a different state")
	}
	checkInvariants(t, other)
	if n := len(other.State().NodeReservations("n1")); n != 7 {
		t.Fatalf("n1 holds %d reservations after restore, want 7 (3 bundles × 2 and the service)", n)
	}
}

// TestSnapshotStoresOnlyServiceReservations: bundles' reservations are not
// written, and the sections say so to older servers (kind 10, not 4).
func TestSnapshotStoresOnlyServiceReservations(t *testing.T) {
	h := compatFixture(t)
	var buf bytes.Buffer
	snap, err := h.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := PersistTo(snap, &buf); err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Sections {
		if s.Kind == 4 {
			t.Fatal("section 4 written; older servers would misread it")
		}
		if s.Kind == 10 && s.Records != 1 {
			t.Fatalf("section 10 has %d records, want the service's 1", s.Records)
		}
	}
	other := New(Config{})
	if err := other.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if stateHash(t, other) != stateHash(t, h.fsm) {
		t.Fatal("restore changed the state")
	}
}

// TestRestoreRowCodecV1Snapshot: a snapshot written with the positional row
// codec (section kinds 11 and 12) restores to the state it was taken from:
// the digest is the one its writer computed. testdata/snapshot_v1.snap was
// written at commit eef47a6 from the compat fixture plus three bundles and
// three assignments with every field set (fill.New), and the digest in
// rows_v1.json is that state's, computed there.
func TestRestoreRowCodecV1Snapshot(t *testing.T) {
	data, err := os.ReadFile("testdata/snapshot_v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/rows_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Digest string `json:"snapshotDigest"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[uint8]bool{}
	for _, s := range info.Sections {
		kinds[s.Kind] = true
	}
	if !kinds[11] || !kinds[12] {
		t.Fatalf("fixture has sections %v, want the v1 row kinds 11 and 12", kinds)
	}
	f := New(Config{})
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	checkLegacyLaunches(t, f)
	if got := olderShapeHash(t, f); got != golden.Digest {
		t.Fatalf("restored digest %s, writer's %s", got, golden.Digest)
	}
	// Saved again, it uses the current kinds and restores to the same state.
	var buf bytes.Buffer
	snap, _ := f.Snapshot()
	if err := PersistTo(snap, &buf); err != nil {
		t.Fatal(err)
	}
	info, err = snapshot.Inspect(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Sections {
		if s.Kind == 11 || s.Kind == 12 {
			t.Fatalf("section %d written; it is read-only", s.Kind)
		}
	}
	again := New(Config{})
	if err := again.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := olderShapeHash(t, again); got != golden.Digest {
		t.Fatal("a v1 snapshot saved again restored to a different state")
	}
}

// checkLegacyLaunches: every launch of the state reads as the union's
// legacy form, whatever shape its writer stored.
func checkLegacyLaunches(t *testing.T, f *FSM) {
	t.Helper()
	eachLaunch(f.State().txn, func(what string, l *Launch) {
		if l.Kind != LaunchLegacy || l.Job == nil || oldShape(l) {
			t.Fatalf("%s launch %+v is not in the legacy form", what, *l)
		}
	})
}

// olderShapeHash is the state's digest with every legacy launch written back
// in the older {driver, command, env} shape: restore normalized the
// launches and must have changed nothing else.
func olderShapeHash(t *testing.T, f *FSM) string {
	t.Helper()
	txn := f.db.Txn(true)
	var rows []struct {
		table string
		row   any
	}
	for _, table := range []string{tableBundles, tableAssignments, tableServices} {
		it, err := txn.All(table, "id")
		if err != nil {
			t.Fatal(err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			rows = append(rows, struct {
				table string
				row   any
			}{table, raw})
		}
	}
	for _, r := range rows {
		cp := cloneRow(t, r.row)
		eachRowLaunch(cp, func(_ string, l *Launch) {
			if l.Kind == LaunchLegacy && l.Job != nil {
				*l = Launch{Driver: l.Job.Driver, Command: l.Job.Command, Env: l.Job.Env}
			}
		})
		if err := txn.Insert(r.table, cp); err != nil {
			t.Fatal(err)
		}
	}
	defer txn.Abort()
	d, err := (&State{txn: txn}).Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func cloneRow(t *testing.T, row any) any {
	switch r := row.(type) {
	case *Bundle:
		cp := cloneBundle(r)
		cp.Spec.Jobs = slices.Clone(r.Spec.Jobs) // the caller rewrites launches
		return cp
	case *Assignment:
		cp := *r
		l := *r.Launch // shared with its bundle's row
		cp.Launch = &l
		return &cp
	case *NodeService:
		cp := *r
		return &cp
	}
	t.Fatalf("cloneRow: %T", row)
	return nil
}

func eachLaunch(txn *rowstore.Txn, fn func(what string, l *Launch)) {
	for _, table := range []string{tableBundles, tableAssignments, tableServices} {
		it, _ := txn.All(table, "id")
		for raw := it.Next(); raw != nil; raw = it.Next() {
			eachRowLaunch(raw, fn)
		}
	}
}

func eachRowLaunch(row any, fn func(what string, l *Launch)) {
	switch r := row.(type) {
	case *Bundle:
		for i := range r.Spec.Jobs {
			fn("bundle "+r.ID(), &r.Spec.Jobs[i].Launch)
		}
	case *Assignment:
		fn("assignment "+r.ID, r.Launch)
	case *NodeService:
		fn("service "+r.ID, &r.Launch)
	}
}
