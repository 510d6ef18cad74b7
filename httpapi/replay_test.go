package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/dropconn"
	"github.com/amserver/amserver/raftstore"
)

// TestForwardReplaysOnlyNoOpRepeats: a forwarded write whose leader
// connection breaks before any answer is sent again when its repeat is a
// no-op on the leader (replaySafe), and is outcomeUnknown otherwise.
func TestForwardReplaysOnlyNoOpRepeats(t *testing.T) {
	withID := string(mustJSON(t, validSpec("b1")))
	for _, tc := range []struct {
		method, path, body string
		sends              int
	}{
		{http.MethodPut, "/v1/pools/p", `{"name":"p"}`, 2},
		{http.MethodPost, "/v1/bundles", withID, 2},
		{http.MethodPost, "/v1/bundles", bundle(func(s *api.BundleSpec) { s.ID = "" }), 1}, // no id: the leader picks one
		{http.MethodDelete, "/v1/bundles/b1", "", 2},
		{http.MethodPut, "/v1/bundles/b1", withID, 1},
		{http.MethodPost, "/v1/operator/raft/transfer-leadership", "", 1},
	} {
		d := dropconn.New()
		leader := httptest.NewServer(d)
		// One connection to the leader: the second forward must reuse it.
		fwd := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		f := newEnv(t, newTestBackend("s2"), func(c *Config) { c.ForwardClient = fwd })
		f.b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: leader.URL}, 0)
		if resp, raw := f.do(http.MethodPut, "/v1/pools/first", []byte(`{"name":"first"}`)); resp.StatusCode != http.StatusOK {
			t.Fatalf("first forward = %d %s", resp.StatusCode, raw)
		}
		resp, raw := f.do(tc.method, tc.path, []byte(tc.body))
		switch {
		case tc.sends == 2 && resp.StatusCode != http.StatusOK:
			t.Errorf("%s %s: replayable forward = %d %s", tc.method, tc.path, resp.StatusCode, raw)
		case tc.sends == 1 && (resp.StatusCode != http.StatusServiceUnavailable || errorBody(t, raw).Code != api.CodeOutcomeUnknown):
			t.Errorf("%s %s: unreplayable forward = %d %s, want outcomeUnknown", tc.method, tc.path, resp.StatusCode, raw)
		}
		if got := d.Seen(tc.method + " " + tc.path); got != tc.sends {
			t.Errorf("%s %s reached the leader %d times, want %d", tc.method, tc.path, got, tc.sends)
		}
		leader.Close()
	}
}

// TestDrainClosesConnections: once drained, every answer, a forwarded one
// included, tells the client not to reuse its connection; before, none
// does.
func TestDrainClosesConnections(t *testing.T) {
	l, f := cluster(t)
	for _, drained := range []bool{false, true} {
		if drained {
			l.s.Drain()
			f.s.Drain()
		}
		for _, e := range []*env{l, f} {
			resp, raw := e.do(http.MethodPut, "/v1/pools/p", mustJSON(t, api.Pool{Name: "p"}))
			if resp.StatusCode != http.StatusOK || resp.Close != drained {
				t.Fatalf("drained %v: %d close=%v %s", drained, resp.StatusCode, resp.Close, raw)
			}
		}
	}
}
