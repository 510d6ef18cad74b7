package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

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
