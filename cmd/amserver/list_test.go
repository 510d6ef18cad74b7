package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// pagedFake serves /v1/bundles in pages of two (tokens "p2", "p3"), and
// fails the page named "fail".
func pagedFake(t *testing.T, failAt string) *fakeAPI {
	t.Helper()
	f := newFake(t)
	page := func(ids ...string) []api.BundleSummary {
		out := make([]api.BundleSummary, len(ids))
		for i, id := range ids {
			out[i] = sampleBundleSummary()
			out[i].ID = id
		}
		return out
	}
	pages := map[string][]api.BundleSummary{"": page("a", "b"), "p2": page("c", "d"), "p3": page("e")}
	next := map[string]string{"": "p2", "p2": "p3"}
	f.on("GET /v1/bundles", func(w http.ResponseWriter, r *http.Request) {
		tok := r.URL.Query().Get("next_token")
		if tok == failAt {
			writeError(w, http.StatusBadRequest, api.CodeBadRequest, "query parameter next_token is not a token this server issued")
			return
		}
		if n := next[tok]; n != "" {
			w.Header().Set(api.HeaderNextToken, n)
		}
		writeJSON(w, http.StatusOK, 7, pages[tok])
	})
	return f
}

// TestListWalksPages: a list walks every page, passing each token back
// with the narrowing flags, and prints one table (one header) or one JSON
// array over all of them.
func TestListWalksPages(t *testing.T) {
	f := pagedFake(t, "none")
	r := runCLI(t, f.srv.URL, "", "bundle", "list", "--filter", `bundle.state == "placed"`, "--prefix", "x", "--per-page", "2", "--pool", "live")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "ID") || strings.Count(r.stdout, "POOL") != 1 {
		t.Fatalf("want a header and 5 rows:\n%s", r.stdout)
	}
	var tokens []string
	for _, req := range f.seen() {
		q := url.Values(req.query)
		if q.Get("filter") != `bundle.state == "placed"` || q.Get("prefix") != "x" || q.Get("per_page") != "2" || q.Get("pool") != "live" {
			t.Errorf("page request lost a flag: %v", q)
		}
		tokens = append(tokens, q.Get("next_token"))
	}
	if fmt.Sprint(tokens) != "[ p2 p3]" {
		t.Errorf("tokens sent %q, want each page's", tokens)
	}
	for _, args := range [][]string{{"-o", "json"}, {"--json"}} {
		r := runCLI(t, f.srv.URL, "", append([]string{"bundle", "list"}, args...)...)
		var got []api.BundleSummary
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 5 || got[4].ID != "e" {
			t.Errorf("%v: %d items, %v:\n%s", args, len(got), err, r.stdout)
		}
	}
	r = runCLI(t, f.srv.URL, "", "bundle", "list", "-o", "wide")
	if got := cell(t, r.stdout, "PRIMARY", "c"); got != "w-1" {
		t.Errorf("wide PRIMARY of c = %q:\n%s", got, r.stdout)
	}
}

// TestListErrors: a bad -o is a usage error, --json cannot disagree with
// -o, a page that fails ends the walk with what came before printed, and a
// first page that fails prints nothing: no header, no [] to read as empty.
func TestListErrors(t *testing.T) {
	f := pagedFake(t, "p3")
	tests := []struct {
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{[]string{"-o", "yaml"}, exitUsage, nil, `-o "yaml": want table, wide or json`},
		{[]string{"-o", "table", "--json"}, exitUsage, nil, "--json and -o table disagree"},
		{[]string{"--per-page", "5000"}, exitUsage, nil, "--per-page 5000"},
		{nil, exitUsage, []string{"a ", "d "}, "not a token this server issued"},
		{[]string{"-o", "json"}, exitUsage, []string{`"id": "d"`, "]"}, "not a token"},
	}
	for _, tt := range tests {
		r := runCLI(t, f.srv.URL, "", append([]string{"bundle", "list"}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tt.args, r.code, tt.code, r.stderr, tt.stderr)
		}
		for _, s := range tt.stdout {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("%v: stdout lacks %q:\n%s", tt.args, s, r.stdout)
			}
		}
	}
	noLeader := newFake(t)
	noLeader.fail("GET /v1/bundles", http.StatusServiceUnavailable, api.CodeNoLeader, "the cluster has no leader")
	for _, args := range [][]string{nil, {"--json"}, {"-o", "wide"}} {
		// The CLI retries noLeader until its retries or --timeout run out,
		// whichever comes first on a busy machine: the error says either.
		r := runCLI(t, noLeader.srv.URL, "", append([]string{"bundle", "list", "--timeout", "1s"}, args...)...)
		if r.code == exitOK || r.stdout != "" || !strings.HasPrefix(r.stderr, "error: ") {
			t.Errorf("%v with no leader: exit %d, stdout %q, stderr %q; want a failure with nothing on stdout", args, r.code, r.stdout, r.stderr)
		}
	}
}
