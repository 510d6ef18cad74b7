package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/fill"
	"github.com/amserver/amserver/ledger"
)

// legacyPage is a page as it was encoded before entries were encoded one
// by one (page_encode.go), kept as the reference: every entry rendered
// into a []any, the slice given to json.Marshal. An error is what the
// request answers instead of a page.
func legacyPage[T any](t *testing.T, e *env, l listing[T], r renderer[T], path string) ([]byte, string, error) {
	t.Helper()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, path, nil), httptest.NewRecorder())
	p, err := parseListParams(c, l.name, l.variable)
	if err != nil {
		return nil, "", err
	}
	p.maxScan = e.s.maxScan
	keep := func(*T) bool { return true }
	if l.narrow != nil {
		if keep, err = l.narrow(c); err != nil {
			return nil, "", err
		}
	}
	items, last, scanned, more := []any{}, "", 0, false
	for row := range l.scan(e.b.State(), p.after, p.prefix) {
		if len(items) == p.perPage || scanned == p.maxScan {
			more = true
			break
		}
		scanned++
		last = l.id(row)
		if !keep(row) {
			continue
		}
		item, ok, err := l.entry(t.Context(), row, p, r)
		if err != nil {
			return nil, "", err
		}
		if ok {
			items = append(items, item)
		}
	}
	body, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	next := ""
	if more {
		next = encodeToken(l.name, last)
	}
	return append(body, '\n'), next, nil
}

// valueBundles renders bundles as values, one per entry, as the bundle
// list did before it reused one value for all.
var valueBundles = renderer[fsm.Bundle]{
	full:    func(b *fsm.Bundle) any { return bundleToAPI(b) },
	summary: func(b *fsm.Bundle, _ any) any { return bundleSummary(b) },
}

// encodeEnv is a varied state: placed and pending bundles of one and two
// jobs, gold ones, tagged ones, a backup, two pools and two nodes.
func encodeEnv(t *testing.T) *env {
	t.Helper()
	e := listEnv(t, bundleIDs(17), "b003", "b007", "b011")
	e.b.mustApply(t, fsm.UpsertPoolType, fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p2", Kind: fsm.PoolCluster, Scoring: fsm.ScoringBinpack}})
	e.b.mustApply(t, fsm.RegisterNodeType, fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: "n2", Pool: "p2", TotalCapacity: 4000, UtilizationCap: 1000, TotalCores: 4, Labels: map[string]string{"rack": "r2", "<b>": "&"},
	}})
	for i, id := range []string{"g0", "g1", "g2"} {
		spec := fsm.BundleSpec{
			ID: id, Pool: "p1", Priority: fsm.PriorityGold, Placement: fsm.Placement{SameAz: fsm.SameAzOff},
			Tags: map[string]string{"team": "video", "html": "<a href='x'>&</a>"},
			Jobs: []fsm.Job{
				{Name: "enc", Requirements: ledger.Request{Capacity: 1500, Cores: 1}, Launch: fsm.Launch{Driver: fsm.DriverNone}},
				{Name: "mux", Requirements: ledger.Request{Capacity: 100}, NodeRules: &fsm.NodeRules{Constraints: []string{`node.labels.rack != "r7"`}}, Launch: fsm.Launch{Driver: fsm.DriverNone}},
			},
		}
		if i == 1 {
			spec.Resilience = &fsm.Resilience{SameNode: "forbid", SameAz: "allow", SameCloud: "allow"}
		}
		e.b.mustApply(t, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: spec})
	}
	return e
}

// TestListEncodingUnchanged: every page of varied walks is byte for byte
// the legacy encoding, with the same next token, and a page that fails
// fails before a byte of it is sent, as it did.
func TestListEncodingUnchanged(t *testing.T) {
	e := encodeEnv(t)
	e.s.maxScan = 5 // filtered walks get short and empty pages with tokens
	q := url.QueryEscape
	type encodeCase struct {
		path  string
		check func(path string) ([]byte, string, error) // the legacy page
	}
	var tests []encodeCase
	for _, query := range []string{
		"", "?per_page=1", "?per_page=4&full=true", "?full=true", "?prefix=g", "?prefix=zz", "?prefix=zz&full=true",
		"?state=placed", "?state=pending&full=true", "?pool=p1&per_page=3", "?pool=p2",
		"?per_page=2&filter=" + q(`bundle.state == "placed"`),
		"?per_page=2&full=true&filter=" + q(`bundle.priority == "gold"`),
		"?filter=" + q(`bundle.tags["team"] == "video"`),
		"?filter=" + q(`bundle.id`), // not a bool: the first entry fails the page
	} {
		tests = append(tests, encodeCase{bundles + query, func(p string) ([]byte, string, error) {
			return legacyPage(t, e, bundleListing, valueBundles, p)
		}})
	}
	for _, query := range []string{"", "?full=true", "?per_page=1", "?filter=" + q(`node.labels["rack"] == "r2"`)} {
		tests = append(tests, encodeCase{"/v1/nodes" + query, func(p string) ([]byte, string, error) {
			return legacyPage(t, e, nodeListing, nodeListing.render(e.s, e.b.State()), p)
		}})
	}
	for _, query := range []string{"", "?per_page=1"} {
		tests = append(tests, encodeCase{"/v1/pools" + query, func(p string) ([]byte, string, error) {
			return legacyPage(t, e, poolListing, poolListing.render(e.s, e.b.State()), p)
		}})
	}
	for _, tc := range tests {
		pages := 0
		for next := ""; ; pages++ {
			path := tc.path
			if next != "" {
				path += "&next_token=" + q(next)
				if !strings.Contains(tc.path, "?") {
					path = tc.path + "?next_token=" + q(next)
				}
			}
			resp, raw := e.do("GET", path, nil)
			want, wantNext, wantErr := tc.check(path)
			if wantErr != nil {
				var ae api.Error
				if resp.StatusCode == http.StatusOK || json.Unmarshal(raw, &ae) != nil {
					t.Errorf("%s: %d %s, want the error %v alone", path, resp.StatusCode, raw, wantErr)
				}
				break
			}
			if got := resp.Header.Get(api.HeaderNextToken); resp.StatusCode != http.StatusOK || !bytes.Equal(raw, want) || got != wantNext {
				t.Errorf("%s: %d %s (next %q)\nwant %s (next %q)", path, resp.StatusCode, raw, got, want, wantNext)
				break
			}
			if next = wantNext; next == "" {
				break
			}
		}
		t.Logf("%s: %d pages", tc.path, pages+1)
	}
}

// TestBundleRenderReuse: rendering varied bundles one after the other into
// one value gives each the encoding of its own fresh value; each filled
// bundle is followed by one of its shape with nothing but names, rendered
// into the lists the filled one left.
func TestBundleRenderReuse(t *testing.T) {
	r := bundleListing.render(nil, nil)
	for seed := range 64 {
		full := fill.New[fsm.Bundle](seed)
		for _, b := range []*fsm.Bundle{full, sparseLike(full), full} {
			for _, form := range []struct {
				name        string
				reused, own any
			}{
				{"full", r.full(b), bundleToAPI(b)},
				{"summary", r.summary(b, nil), bundleSummary(b)},
			} {
				if got, want := mustJSONNoT(form.reused), mustJSONNoT(form.own); !bytes.Equal(got, want) {
					t.Fatalf("seed %d %s: reused value encodes\n%s\nwant\n%s", seed, form.name, got, want)
				}
			}
		}
	}
}

// sparseLike is a bundle of b's shape (its jobs, replicas and placements)
// holding only their names.
func sparseLike(b *fsm.Bundle) *fsm.Bundle {
	out := &fsm.Bundle{Spec: fsm.BundleSpec{ID: b.Spec.ID}}
	for _, j := range b.Spec.Jobs {
		out.Spec.Jobs = append(out.Spec.Jobs, fsm.Job{Name: j.Name})
	}
	for _, r := range b.Replicas {
		rep := fsm.Replica{}
		for _, j := range r.Jobs {
			rep.Jobs = append(rep.Jobs, fsm.JobPlacement{Name: j.Name})
		}
		out.Replicas = append(out.Replicas, rep)
	}
	return out
}
