package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/amserver/amserver/raftstore"
)

// testUI stands in for ui.Handler (httpapi must not import ui): it answers
// with the path it was given, so the tests see what the mount strips.
var testUI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ui:" + r.URL.Path))
})

func withTestUI(c *Config) { c.UI = testUI }

// TestUIRoutes: the UI is served locally even by a follower with no
// usable leader connection, rooted at /ui/, and / and /ui redirect to it.
func TestUIRoutes(t *testing.T) {
	var forwarded atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		forwarded.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(leader.Close)
	b := newTestBackend("s2")
	b.setFollower(raftstore.LeaderInfo{ID: "s1", RaftAddr: "s1:7071", HTTPAddr: leader.URL}, 0)
	e := newEnv(t, b, withTestUI)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		path, location, body string
		status               int
	}{
		{path: "/", status: http.StatusFound, location: "/ui/"},
		{path: "/ui", status: http.StatusFound, location: "/ui/"},
		{path: "/ui/", status: http.StatusOK, body: "ui:/"},
		{path: "/ui/app.js", status: http.StatusOK, body: "ui:/app.js"},
		{path: "/ui/?stale", status: http.StatusOK, body: "ui:/"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, e.hs.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			body := string(raw)
			if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location || (tc.body != "" && body != tc.body) {
				t.Fatalf("GET %s = %d location %q body %q; want %d %q %q",
					tc.path, resp.StatusCode, resp.Header.Get("Location"), body, tc.status, tc.location, tc.body)
			}
		})
	}
	if n := forwarded.Load(); n != 0 {
		t.Fatalf("%d UI requests were forwarded to the leader", n)
	}
}

// Without a UI handler nothing is served under /ui/.
func TestUIRoutesAbsentWithoutHandler(t *testing.T) {
	e := leaderEnv(t)
	for _, p := range []string{"/", "/ui", "/ui/"} {
		resp, _ := e.do(http.MethodGet, p, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s without a UI = %d, want 404", p, resp.StatusCode)
		}
	}
}
