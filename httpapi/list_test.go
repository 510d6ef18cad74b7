package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// listEnv is a leader with n1 and the bundles ids, each created in its own
// entry; bundles whose id is in placed are placed on n1.
func listEnv(t *testing.T, ids []string, placed ...string) *env {
	t.Helper()
	e := leaderEnv(t)
	seedCluster(t, e.b)
	for _, id := range ids {
		createBundle(t, e.b, id, fsm.PrioritySilver)
		if slices.Contains(placed, id) {
			placeOnN1(t, e.b, id)
		}
	}
	return e
}

func createBundle(t testing.TB, b *testBackend, id, priority string) {
	t.Helper()
	b.mustApply(t, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: fsm.BundleSpec{
		ID: id, Pool: "p1", Priority: priority, Placement: fsm.Placement{SameAz: fsm.SameAzOff},
		Jobs: []fsm.Job{{Name: "enc", Requirements: ledger.Request{Capacity: 100}, Launch: fsm.Launch{Driver: fsm.DriverNone}}},
	}})
}

// placeOnN1 places createBundle's job on n1 (no cores, so any number fit).
func placeOnN1(t testing.TB, b *testBackend, id string) {
	t.Helper()
	res := b.mustApply(t, fsm.ApplyPlanType, fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{{
		BundleID: id, Place: []fsm.Place{{Slot: 0, Job: "enc", Node: "n1", Grant: ledger.Grant{Capacity: 100}}},
	}}}}})
	if pr := res.Value.(*fsm.PlanResult); len(pr.Committed) != 1 {
		t.Fatalf("plan rejected: %+v", pr.Rejected)
	}
}

func bundleIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("b%03d", i)
	}
	return ids
}

// page is one page as a client sees it.
type rawPage struct {
	status int
	items  []map[string]any
	next   string
	index  uint64
}

func (e *env) page(path string) rawPage {
	e.t.Helper()
	resp, raw := e.do("GET", path, nil)
	p := rawPage{status: resp.StatusCode, next: resp.Header.Get(api.HeaderNextToken)}
	p.index, _ = strconv.ParseUint(resp.Header.Get(api.HeaderIndex), 10, 64)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &p.items); err != nil {
			e.t.Fatalf("%s: %v: %s", path, err, raw)
		}
	} else {
		e.t.Fatalf("%s: %d %s", path, resp.StatusCode, raw)
	}
	return p
}

// walkIDs follows the tokens from path and returns the ids of every page,
// calling between(page) after each one.
func (e *env) walkIDs(path string, between func(int)) (ids []string, pages int) {
	e.t.Helper()
	sep := "?"
	if u, _ := url.Parse(path); u.RawQuery != "" {
		sep = "&"
	}
	for next := ""; ; pages++ {
		q := path
		if next != "" {
			q += sep + "next_token=" + url.QueryEscape(next)
		}
		p := e.page(q)
		if p.index == 0 {
			e.t.Fatalf("%s: no index header", q)
		}
		for _, it := range p.items {
			ids = append(ids, it["id"].(string))
		}
		if between != nil {
			between(pages)
		}
		if next = p.next; next == "" {
			return ids, pages + 1
		}
	}
}

// TestListPaging: pages follow each other in id order, hold per_page
// entries, and the last one has no token.
func TestListPaging(t *testing.T) {
	ids := bundleIDs(23)
	e := listEnv(t, ids)
	tests := []struct {
		query string
		pages int
		want  []string
	}{
		{"", 1, ids},
		{"?per_page=7", 4, ids},
		{"?per_page=23", 1, ids},
		{"?per_page=22", 2, ids},
		{"?per_page=1", 23, ids},
		{"?per_page=1000", 1, ids},
		{"?prefix=b01&per_page=3", 4, ids[10:20]},
		{"?prefix=zz", 1, nil},
		{"?state=pending&per_page=5", 5, ids},
		{"?state=placed", 1, nil},
	}
	for _, tc := range tests {
		got, pages := e.walkIDs(bundles+tc.query, nil)
		if !slices.Equal(got, tc.want) || pages != tc.pages {
			t.Errorf("%s: %d pages %v, want %d pages %v", tc.query, pages, got, tc.pages, tc.want)
		}
	}
}

// TestListStateFilter: ?state= takes every state a bundle can be in (issue:
// complete and failed, a batch bundle's final states, were refused) and
// finds the bundles in it.
func TestListStateFilter(t *testing.T) {
	e := listEnv(t, []string{"b1", "b2"}, "b2")
	finishBatch(t, e.b, "batch1")
	tests := []struct {
		state string
		want  []string
	}{
		{fsm.StateScheduled, nil},
		{fsm.StatePending, []string{"b1"}},
		{fsm.StatePlaced, []string{"b2"}},
		{fsm.StateDegraded, nil},
		{fsm.StateUnplaceable, nil},
		{fsm.StateDeleting, nil},
		{fsm.StateComplete, []string{"batch1"}},
		{fsm.StateFailed, nil},
	}
	var covered []string
	for _, tc := range tests {
		covered = append(covered, tc.state)
		if got, _ := e.walkIDs(bundles+"?state="+tc.state, nil); !slices.Equal(got, tc.want) {
			t.Errorf("?state=%s: %v, want %v", tc.state, got, tc.want)
		}
	}
	// A state the API can show must be one the filter was tried with.
	slices.Sort(covered)
	if !slices.Equal(covered, stringConsts(t, "../api/types_bundle.go", "State")) {
		t.Errorf("the table covers %v, not every api State constant", covered)
	}
}

// finishBatch creates batch bundle id with createBundle's job, places it on
// n1 and reports the job exited 0, which completes the bundle.
func finishBatch(t *testing.T, b *testBackend, id string) {
	t.Helper()
	b.mustApply(t, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: fsm.BundleSpec{
		ID: id, Pool: "p1", Priority: fsm.PrioritySilver, Kind: fsm.KindBatch, Placement: fsm.Placement{SameAz: fsm.SameAzOff},
		Jobs: []fsm.Job{{Name: "enc", Requirements: ledger.Request{Capacity: 100}, Launch: fsm.Launch{Driver: fsm.DriverNone}}},
	}})
	placeOnN1(t, b, id)
	for _, a := range b.fsm.State().NodeAssignments("n1") {
		if a.BundleID == id {
			b.mustApply(t, fsm.AssignmentStatusType, fsm.AssignmentStatusRequest{
				NodeID: "n1", AssignmentID: a.ID, Status: fsm.JobExited, Generation: a.Generation})
		}
	}
	if got := b.fsm.State().Bundle(id).State; got != fsm.StateComplete {
		t.Fatalf("batch bundle %s is %s, want complete", id, got)
	}
}

// TestListStableUnderWrites: a walk sees every bundle that exists for the
// whole walk exactly once, while bundles are created before and after its
// position and others deleted between its pages.
func TestListStableUnderWrites(t *testing.T) {
	ids := bundleIDs(30)
	e := listEnv(t, ids)
	got, _ := e.walkIDs(bundles+"?per_page=4", func(page int) {
		for _, id := range []string{fmt.Sprintf("a%02d", page), fmt.Sprintf("c%02d", page), fmt.Sprintf("b%03da", page*4)} {
			createBundle(t, e.b, id, fsm.PrioritySilver)
		}
		if victim := ids[len(ids)-1-page]; page < 5 {
			e.b.mustApply(t, fsm.DeleteBundleType, fsm.DeleteBundleRequest{ID: victim})
		}
	})
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range ids[:len(ids)-5] { // those never deleted
		if seen[id] != 1 {
			t.Errorf("bundle %s seen %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("bundle %s seen %d times", id, n)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("walk out of order: %v", got)
	}
}

// TestListFilter: a filter sees the API form of each entry and applies
// before paging, so every page holds per_page matches; entries it fails
// on (a missing key) do not match.
func TestListFilter(t *testing.T) {
	ids := bundleIDs(20)
	e := listEnv(t, ids, "b003", "b007")
	e.b.mustApply(t, fsm.UpsertPoolType, fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p2", Kind: fsm.PoolCluster, Scoring: fsm.ScoringBinpack}})
	for i := range 5 {
		id := fmt.Sprintf("g%d", i)
		e.b.mustApply(t, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: fsm.BundleSpec{
			ID: id, Pool: "p1", Priority: fsm.PriorityGold, Placement: fsm.Placement{SameAz: fsm.SameAzOff},
			Jobs: []fsm.Job{{Name: "enc", Requirements: ledger.Request{Capacity: 1500}}},
		}})
	}
	tests := []struct {
		path, filter string
		want         []string
		perPage      int
	}{
		{bundles, `bundle.priority == "gold"`, []string{"g0", "g1", "g2", "g3", "g4"}, 2},
		{bundles, `bundle.state == "placed"`, []string{"b003", "b007"}, 1},
		{bundles, `bundle.replicas.exists(r, r.jobs.exists(j, j.nodeId == "n1"))`, []string{"b003", "b007"}, 100},
		{bundles, `bundle.jobs[0].requirements.capacity > 1`, []string{"g0", "g1", "g2", "g3", "g4"}, 100},
		{bundles, `bundle.epoch == 1 && bundle.id.startsWith("g")`, []string{"g0", "g1", "g2", "g3", "g4"}, 3},
		{bundles, `bundle.tags["team"] == "video"`, nil, 100}, // no tags: an error per entry, no match
		{"/v1/nodes", `node.labels["rack"] == "r1" && node.status == "ready"`, []string{"n1"}, 100},
		{"/v1/nodes", `node.labels["az"] == "az1"`, []string{"n1"}, 100},
		{"/v1/nodes", `node.status != "ready"`, nil, 100},
		{"/v1/pools", `pool.tiers.size() == 2`, []string{"p1"}, 100},
		{"/v1/pools", `pool.name.startsWith("p")`, []string{"p1", "p2"}, 1},
	}
	for _, tc := range tests {
		q := fmt.Sprintf("%s?per_page=%d&filter=%s", tc.path, tc.perPage, url.QueryEscape(tc.filter))
		got, pages := e.walkIDsOrNames(q)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.path, tc.filter, got, tc.want)
		}
		if want := max(1, (len(tc.want)+tc.perPage-1)/tc.perPage); pages > want+1 {
			t.Errorf("%s %s: %d pages for %d matches at %d per page", tc.path, tc.filter, pages, len(tc.want), tc.perPage)
		}
	}
}

// walkIDsOrNames walks a list whose entries are keyed id or name.
func (e *env) walkIDsOrNames(path string) ([]string, int) {
	e.t.Helper()
	var out []string
	pages := 0
	for next := ""; ; {
		q := path
		if next != "" {
			q += "&next_token=" + url.QueryEscape(next)
		}
		p := e.page(q)
		pages++
		for _, it := range p.items {
			if id, ok := it["id"].(string); ok {
				out = append(out, id)
			} else {
				out = append(out, it["name"].(string))
			}
		}
		if next = p.next; next == "" {
			return out, pages
		}
	}
}

// TestListScanBudget: a filter that matches little answers short pages
// with a token to go on, examining at most maxScan rows each, and the walk
// still finds every match.
func TestListScanBudget(t *testing.T) {
	ids := bundleIDs(12)
	e := listEnv(t, ids, "b010")
	e.s.maxScan = 4
	filter := url.QueryEscape(`bundle.state == "placed"`)
	first := e.page(bundles + "?filter=" + filter)
	if len(first.items) != 0 || first.next == "" {
		t.Fatalf("first page: %d items, token %q; want an empty page with a token", len(first.items), first.next)
	}
	got, pages := e.walkIDsOrNames(bundles + "?filter=" + filter)
	if !slices.Equal(got, []string{"b010"}) || pages != 3 {
		t.Fatalf("walk: %v in %d pages, want [b010] in 3", got, pages)
	}
}

// TestListByteBudget: a page stops once its body passes the byte budget,
// with at least one entry and a token, however many entries per_page asks
// for, and the walk still finds every entry once.
func TestListByteBudget(t *testing.T) {
	ids := bundleIDs(12)
	e := listEnv(t, ids)
	one := e.page(bundles + "?full=true&per_page=1")
	e.s.maxPageBytes = 1 // passed by any entry: one entry per page
	first := e.page(bundles + "?full=true&per_page=1000")
	if len(first.items) != 1 || first.next == "" {
		t.Fatalf("first page: %d items, token %q; want one entry and a token", len(first.items), first.next)
	}
	if len(one.items) != 1 || one.items[0]["id"] != first.items[0]["id"] {
		t.Fatalf("first page %v, want %v", first.items, one.items)
	}
	got, pages := e.walkIDsOrNames(bundles + "?full=true&per_page=1000")
	if !slices.Equal(got, ids) || pages != len(ids) {
		t.Fatalf("walk: %v in %d pages, want %v in %d", got, pages, ids, len(ids))
	}
}

// TestListForms: entries are summaries unless ?full=true, and a GET by id
// answers what ?full=true lists.
func TestListForms(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	placeBundle(t, e.b, "b1")
	var summaries []api.BundleSummary
	if _, raw := e.do("GET", bundles, nil); json.Unmarshal(raw, &summaries) != nil || len(summaries) != 1 {
		t.Fatalf("summaries: %s", raw)
	}
	want := api.BundleSummary{ID: "b1", Pool: "p1", Priority: "silver", EffectivePriority: "silver", Kind: "resilient", State: summaries[0].State, Epoch: 1, Jobs: 1,
		WantReplicas: 1, Replicas: []api.ReplicaSummary{{Role: "primary", State: "placed", Nodes: []string{"n1"},
			Statuses: map[string]int{"assigned": 1}}}, Degradations: []string{},
		CreateIndex: summaries[0].CreateIndex, ModifyIndex: summaries[0].ModifyIndex}
	if got := summaries[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	_, full := e.do("GET", bundles+"?full=true", nil)
	_, one := e.do("GET", bundles+"/b1", nil)
	if string(full) != "["+string(one[:len(one)-1])+"]\n" {
		t.Errorf("full list %s is not [GET by id] %s", full, one)
	}
	var nodes []api.NodeSummary
	if _, raw := e.do("GET", "/v1/nodes", nil); json.Unmarshal(raw, &nodes) != nil || len(nodes) != 1 {
		t.Fatalf("node summaries: %s", raw)
	}
	if n := nodes[0]; n.ID != "n1" || n.Allocatable != 8 || n.ReservedCapacity != 1.5 || n.ReservedCores != 2 ||
		n.GPUCapacity != 1 || n.ReservedGPU != 0.25 || n.Assignments != 1 || n.Labels["az"] != "az1" {
		t.Errorf("node summary %+v", n)
	}
}

// TestListBlocking: ?index= on a page blocks until the list's tables move,
// and the page it then answers is the new one.
func TestListBlocking(t *testing.T) {
	e := listEnv(t, bundleIDs(3))
	first := e.page(bundles + "?per_page=2")
	before := e.b.watches.Load()
	done := make(chan rawPage, 1)
	go func() {
		done <- e.page(fmt.Sprintf("%s?per_page=2&index=%d&wait=1m", bundles, first.index))
	}()
	e.b.waitWatching(t, before)
	createBundle(t, e.b, "a0", fsm.PrioritySilver)
	select {
	case p := <-done:
		if p.index <= first.index || len(p.items) != 2 || p.items[0]["id"] != "a0" || p.next == "" {
			t.Fatalf("woken page: index %d (was %d), %v, token %q", p.index, first.index, p.items, p.next)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking page never answered")
	}
}

// TestListClientWalk: the Go client's iterators and collectors walk every
// page, blocking only on the first.
func TestListClientWalk(t *testing.T) {
	ids := bundleIDs(15)
	e := listEnv(t, ids)
	var got []string
	for b, err := range e.c.ListBundles(ctx(t), api.BundleFilter{}, api.ListOptions{PerPage: 4}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.ID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("ListBundles: %v", got)
	}
	all, meta, err := e.c.Bundles(ctx(t), api.BundleFilter{}, nil)
	if err != nil || len(all) != len(ids) || meta.Index == 0 || len(all[0].Jobs) != 1 {
		t.Fatalf("Bundles: %d bundles, meta %+v, %v", len(all), meta, err)
	}
	for _, err := range e.c.ListBundles(ctx(t), api.BundleFilter{}, api.ListOptions{Filter: "x =="}, nil) {
		if !api.IsCode(err, api.CodeBadRequest) {
			t.Fatalf("bad filter: %v", err)
		}
	}
}
