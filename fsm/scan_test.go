package fsm

import (
	"slices"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// TestScanAfter: a listing resumes strictly after its position, keeps to
// its prefix and stays in id order, including ids that extend one another
// ("a" before "a-b" before "ab").
func TestScanAfter(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n", "p", "az1", "c1", 100000, 64))
	ids := []string{"b", "a-b", "ab", "a", "abc", "c1", "c10", "c2"}
	for _, id := range ids {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(id, "p", testJob("j", 100, 0))})
	}
	tests := []struct {
		after, prefix string
		want          []string
	}{
		{"", "", []string{"a", "a-b", "ab", "abc", "b", "c1", "c10", "c2"}},
		{"a", "", []string{"a-b", "ab", "abc", "b", "c1", "c10", "c2"}},
		{"ab", "", []string{"abc", "b", "c1", "c10", "c2"}},
		{"aa", "", []string{"ab", "abc", "b", "c1", "c10", "c2"}}, // a position that is no id
		{"", "ab", []string{"ab", "abc"}},
		{"ab", "ab", []string{"abc"}},
		{"", "c1", []string{"c1", "c10"}},
		{"c10", "c", []string{"c2"}},
		{"z", "", nil},
		{"b", "a", nil}, // past the prefix's range
		{"", "zz", nil},
	}
	st := h.fsm.State()
	for _, tc := range tests {
		var got []string
		for b := range st.BundlesAfter(tc.after, tc.prefix) {
			got = append(got, b.Spec.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("after %q prefix %q: got %v, want %v", tc.after, tc.prefix, got, tc.want)
		}
	}
	var nodes []string
	for n := range st.NodesAfter("", "") {
		nodes = append(nodes, n.ID)
	}
	if !slices.Equal(nodes, []string{"n"}) {
		t.Errorf("nodes: %v", nodes)
	}
}

// TestEventsPage: a page ends on a raft entry's boundary, however many
// events that entry holds, so a reader resuming after its last index loses
// none: walking pages of any size yields every event once, in order.
func TestEventsPage(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n", "p", "az1", "c1", 100000, 64))
	plan := &Plan{}
	for _, id := range []string{"a", "b", "c", "d"} {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(id, "p", testJob("j", 100, 0))})
		plan.Parts = append(plan.Parts, PlanPart{Updates: []BundleUpdate{{BundleID: id, Place: []Place{
			{Slot: 0, Job: "j", Node: "n", Grant: ledger.Grant{Capacity: 100}}}}}})
	}
	h.ok(ApplyPlanType, plan) // one entry, four bundlePlaced events
	st := h.fsm.State()
	all := st.Events(0, 0)
	if n := len(all); n < 8 || all[n-1].Index != all[n-4].Index {
		t.Fatalf("want an entry of several events to page over, have %+v", all)
	}
	for _, limit := range []int{1, 2, 3, 5, len(all), len(all) + 5} {
		var got []Event
		for cursor := uint64(0); ; {
			page := st.EventsPage(cursor, limit)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			cursor = page[len(page)-1].Index
		}
		if !slices.Equal(got, all) {
			t.Errorf("limit %d: paged %v, want %v", limit, got, all)
		}
	}
}

// TestEventTypesAt: the types of exactly the events one raft entry
// recorded, in order, for every index the log holds (none for an index
// without events, or past the end).
func TestEventTypesAt(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n", "p", "az1", "c1", 100000, 64))
	plan := &Plan{}
	for _, id := range []string{"a", "b", "c"} {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(id, "p", testJob("j", 100, 0))})
		plan.Parts = append(plan.Parts, PlanPart{Updates: []BundleUpdate{{BundleID: id, Place: []Place{
			{Slot: 0, Job: "j", Node: "n", Grant: ledger.Grant{Capacity: 100}}}}}})
	}
	h.ok(ApplyPlanType, plan)
	st := h.fsm.State()
	want := map[uint64][]string{}
	var last uint64
	for _, e := range st.Events(0, 0) {
		want[e.Index] = append(want[e.Index], e.Type)
		last = e.Index
	}
	if len(want[last]) != 3 {
		t.Fatalf("want the plan's entry to hold 3 events, have %v", want[last])
	}
	for index := range last + 2 {
		var got []string
		st.EventTypesAt(index, func(typ string) { got = append(got, typ) })
		if !slices.Equal(got, want[index]) {
			t.Errorf("index %d: %v, want %v", index, got, want[index])
		}
	}
}
