package agent

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
)

// healthServer answers /v1/health as a peer in the given condition would.
func healthServer(t *testing.T, h api.Health) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestPeersInCluster: bootstrapping needs every peer to answer that it has
// no cluster; one that has any sign of one, or does not answer, stops it.
func TestPeersInCluster(t *testing.T) {
	fresh := healthServer(t, api.Health{Status: "ok"})
	member := healthServer(t, api.Health{Status: "ok", Peers: 3, KnownLeader: true, Index: 42})
	applied := healthServer(t, api.Health{Status: "ok", Index: 7})
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	peer := func(name, addr string) gossip.Member {
		return gossip.Member{Name: name, Meta: gossip.Meta{Role: gossip.RoleServer, HTTPAddr: addr}}
	}
	self := peer("s1", "")
	cases := []struct {
		name               string
		peers              []gossip.Member
		wantMember, unsure string
	}{
		{"all fresh", []gossip.Member{self, peer("s2", fresh), peer("s3", fresh)}, "", ""},
		{"one in a cluster", []gossip.Member{self, peer("s2", fresh), peer("s3", member)}, "s3", ""},
		{"one with applied state", []gossip.Member{self, peer("s2", applied), peer("s3", fresh)}, "s2", ""},
		{"one silent", []gossip.Member{self, peer("s2", fresh), peer("s3", deadURL)}, "", "s3"},
		{"one without an address", []gossip.Member{self, peer("s2", ""), peer("s3", fresh)}, "", "s2"},
	}
	s := &Server{cfg: Config{NodeID: "s1"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gotMember, gotUnsure := s.peersInCluster(t.Context(), tc.peers)
			if gotMember != tc.wantMember || gotUnsure != tc.unsure {
				t.Fatalf("member %q unsure %q, want %q %q", gotMember, gotUnsure, tc.wantMember, tc.unsure)
			}
		})
	}
}

// TestWipedServerRejoinsWithoutBootstrapping: a server whose data
// directory was wiped, restarted with its original flags next to its
// running peers, must not bootstrap a configuration of its own (a second
// bootstrap of a live membership is a split-brain door); the leader takes
// it back and it catches up.
func TestWipedServerRejoinsWithoutBootstrapping(t *testing.T) {
	servers := startTCPCluster(t, 3)
	leader := waitLeader(t, servers)
	c := client(t, leader)
	if _, err := c.PutPool(ctxTimeout(t, 10*time.Second), testPool("before-wipe")); err != nil {
		t.Fatal(err)
	}
	var victim *Server
	for _, s := range servers {
		if s != leader {
			victim = s
			break
		}
	}
	// The original flags: the same addresses (a restarted container keeps
	// its IP), now with the ports the first start bound.
	cfg := victim.cfg
	cfg.HTTPAddr, cfg.HTTPAdvertise = victim.HTTPAddr(), ""
	cfg.RaftAddr, cfg.RaftAdvertise = victim.Store().LocalAddr(), ""
	gossipHost, gossipPort, err := net.SplitHostPort(victim.gossip.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gossip.BindAddr = gossipHost
	if cfg.Gossip.BindPort, err = strconv.Atoi(gossipPort); err != nil {
		t.Fatal(err)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	tap := &logTap{}
	cfg.Logger = slog.New(tap)
	cfg.Join = []string{leader.gossip.LocalAddr()}
	reborn := startServer(t, cfg)
	eventually(t, 30*time.Second, "the wiped server back in the configuration, caught up", func() bool {
		l := waitLeader(t, []*Server{servers[0], servers[1], servers[2], reborn})
		f := l.Raft().GetConfiguration()
		if f.Error() != nil {
			return false
		}
		back := slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool {
			return string(s.ID) == cfg.NodeID && string(s.Address) == reborn.Store().LocalAddr()
		})
		return back && reborn.FSM().State().Pool("before-wipe") != nil
	})
	if tap.saw("raft bootstrapped") {
		t.Fatalf("the wiped server bootstrapped Raft again: %s", strings.Join(tap.msgs, "; "))
	}
}
