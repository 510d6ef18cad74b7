package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/amserver/amserver/raftstore"
)

// queryProbes are the query parameters a route can be seen to parse: given
// a value it cannot take, a route that parses the parameter answers 400
// naming it, and a route that ignores it does not. (pool= takes any value,
// so only the document vouches for it.)
var queryProbes = []struct{ name, bogus string }{
	{"stale", "maybe"}, {"consistent", "maybe"}, {"force", "maybe"},
	{"index", "soon"}, {"wait", "soon"}, {"cas", "soon"},
	{"state", "bogus"}, {"status", "bogus"},
	{"per_page", "soon"}, {"next_token", "soon"}, {"filter", "1"}, {"full", "maybe"},
}

// Each documented operation lists exactly the probeable query parameters
// its route parses on the real router.
func TestOpenAPIQueryParamsMatchRouter(t *testing.T) {
	e := leaderEnv(t)
	for key, o := range openAPI(t).ops(t) {
		if o.Planned {
			continue
		}
		var documented []string
		for _, p := range o.Parameters {
			if p.In == "query" {
				documented = append(documented, p.Name)
			}
		}
		for _, q := range queryProbes {
			status, msg := probe(t, e.hs.URL, o, "?"+q.name+"="+q.bogus)
			parses := status == http.StatusBadRequest && strings.Contains(msg, q.name+`="`+q.bogus+`"`)
			if parses != slices.Contains(documented, q.name) {
				t.Errorf("%s: router parses ?%s: %v (answer %d %q); documented: %v", key, q.name, parses, status, msg, !parses)
			}
		}
	}
}

// Each operation's x-amserver-consistency is what the router does: on a
// follower, local routes answer themselves, reads go to the leader unless
// ?stale, and writes always go to the leader.
func TestOpenAPIConsistencyMatchesRouter(t *testing.T) {
	var forwarded atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(leader.Close)
	b := newTestBackend("s2")
	b.setFollower(raftstore.LeaderInfo{ID: "s1", RaftAddr: "s1:7071", HTTPAddr: leader.URL}, 0)
	e := newEnv(t, b, withTestUI)
	for key, o := range openAPI(t).ops(t) {
		if o.Planned {
			continue
		}
		went := func(query string) bool {
			before := forwarded.Load()
			probe(t, e.hs.URL, o, query)
			return forwarded.Load() > before
		}
		plain, stale := went(""), went("?stale")
		class := map[[2]bool]string{{false, false}: "local", {true, false}: "read", {true, true}: "write"}[[2]bool{plain, stale}]
		if class != o.Consistency {
			t.Errorf("%s: the router treats it as %q (forwarded: %v, with ?stale: %v); documented %q",
				key, class, plain, stale, o.Consistency)
		}
	}
}

// probe sends o's method and path (path parameters filled in) with query
// and no body, and returns the status and, for a 400, the error message.
// Other answers are not read: an event stream would never end.
func probe(t *testing.T, base string, o op, query string) (int, string) {
	t.Helper()
	path := pathParam.ReplaceAllString(o.path, "x")
	req, err := http.NewRequestWithContext(ctx(t), o.method, base+path+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", o.key, query, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusBadRequest {
		return resp.StatusCode, ""
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &body) // a non-JSON 400 simply names no parameter
	return resp.StatusCode, body.Error.Message
}

// TestQueryNamesAreDocumented: the names checkQueryName guards are the
// query parameters the document lists, so a new one is guarded too.
func TestQueryNamesAreDocumented(t *testing.T) {
	var documented []string
	for _, o := range openAPI(t).ops(t) {
		for _, p := range o.Parameters {
			if p.In == "query" && !slices.Contains(documented, p.Name) {
				documented = append(documented, p.Name)
			}
		}
	}
	slices.Sort(documented)
	if !slices.Equal(documented, queryNames) {
		t.Fatalf("query parameters documented %v, guarded %v", documented, queryNames)
	}
}
