package httpapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/raftstore"
)

// TestRaftConfigurationWithoutLeader: GET /v1/operator/raft is what an
// operator reaches for when quorum is lost, so a server that cannot reach a
// leader answers with its own configuration (no leader in it, and
// X-Amserver-KnownLeader false) instead of noLeader, and promptly.
func TestRaftConfigurationWithoutLeader(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + l.Addr().String()
	_ = l.Close()
	leader := leaderEnv(t)
	for _, tc := range []struct {
		name       string
		setup      func(b *testBackend)
		answeredBy string
		leader     string // "" when the answer must hold none
		known      string // X-Amserver-KnownLeader
	}{
		{"no leader known", func(b *testBackend) { b.setNoLeader() }, "s2", "", "false"},
		{"leader unreachable", func(b *testBackend) {
			b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: unreachable}, 0)
		}, "s2", "s1", "true"},
		{"leader without quorum", func(b *testBackend) {
			b.setLeader("http://s2.invalid")
			b.set(func(b *testBackend) { b.barrierHang = true })
		}, "s2", "s2", "true"},
		{"leader", func(b *testBackend) { b.setLeader("http://s2.invalid") }, "s2", "s2", "true"},
		{"follower of a live leader", func(b *testBackend) {
			b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: leader.hs.URL}, 0)
		}, "s1", "s1", "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newTestBackend("s2"))
			tc.setup(e.b)
			rc, known := getRaftConfiguration(t, e.hs.URL)
			leaderID := ""
			if rc.Leader != nil {
				leaderID = rc.Leader.ID
			}
			if rc.ServerID != tc.answeredBy || leaderID != tc.leader || len(rc.Servers) == 0 ||
				known != tc.known || rc.LogStore != "wal" {
				t.Fatalf("answered by %q (log store %q) with leader %q, %d servers, known leader %q; want %q (wal), %q, servers, %q",
					rc.ServerID, rc.LogStore, leaderID, len(rc.Servers), known, tc.answeredBy, tc.leader, tc.known)
			}
		})
	}
}

// The fallback is this endpoint's alone: other reads still refuse without a
// leader, and ?stale still answers locally.
func TestOnlyTheDiagnosticFallsBack(t *testing.T) {
	e := newEnv(t, newTestBackend("s2"))
	e.b.setNoLeader()
	if resp, _ := e.do(http.MethodGet, "/v1/pools", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET /v1/pools without leader = %d", resp.StatusCode)
	}
	if resp, raw := e.do(http.MethodGet, "/v1/operator/raft?stale", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("stale raft read = %d %s", resp.StatusCode, raw)
	}
}

// TestRaftConfigurationLeaderSilent: a leader that accepts the forward and
// never answers (a frozen process keeps its connections open) must not
// hold the diagnostic: once its followers lose it they know no leader, and
// a forward in flight then waited for as long as the client did.
func TestRaftConfigurationLeaderSilent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	e := newEnv(t, newTestBackend("s2"))
	e.b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: "http://" + l.Addr().String()}, 0)
	if rc, _ := getRaftConfiguration(t, e.hs.URL); rc.ServerID != "s2" {
		t.Fatalf("answered by %q; want s2", rc.ServerID)
	}
}

// getRaftConfiguration asks url for GET /v1/operator/raft, which must
// answer 200 within twice the forward's bound, and returns the answer and
// its X-Amserver-KnownLeader.
func getRaftConfiguration(t *testing.T, url string) (api.RaftConfiguration, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*diagnosticBarrier)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/operator/raft", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var rc api.RaftConfiguration
	if err := json.NewDecoder(resp.Body).Decode(&rc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, decode %v", resp.StatusCode, err)
	}
	return rc, resp.Header.Get(api.HeaderKnownLeader)
}
