package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/amserver/amserver/gossip"
)

func TestGossipPeers(t *testing.T) {
	srv := func(name string, port int, st gossip.Status) gossip.Member {
		return gossip.Member{Name: name, Addr: "10.0.0.1", Port: port, Status: st, Meta: gossip.Meta{Role: gossip.RoleServer}}
	}
	worker := srv("w1", 9, gossip.StatusAlive)
	worker.Meta.Role = gossip.RoleWorker
	members := []gossip.Member{srv("s1", 1, gossip.StatusAlive), srv("s3", 3, gossip.StatusAlive),
		srv("s2", 2, gossip.StatusAlive), srv("s4", 4, gossip.StatusLeft), worker}
	got := aliveServerAddrs(members, "s1")
	if want := []string{"10.0.0.1:2", "10.0.0.1:3"}; !slices.Equal(got, want) {
		t.Fatalf("alive servers %v, want %v (not self, workers or the left)", got, want)
	}

	dir := t.TempDir()
	if none, err := loadGossipPeers(dir); err != nil || none != nil {
		t.Fatalf("no file: %v, %v; want nothing and no error", none, err)
	}
	if err := saveGossipPeers(dir, got); err != nil {
		t.Fatal(err)
	}
	back, err := loadGossipPeers(dir)
	if err != nil || !slices.Equal(back, got) {
		t.Fatalf("loaded %v, %v; want %v", back, err, got)
	}
	if err := os.WriteFile(filepath.Join(dir, gossipPeersFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadGossipPeers(dir); err == nil {
		t.Fatal("a damaged file loaded without an error")
	}

	tests := []struct{ join, remembered, want []string }{
		{nil, nil, nil},
		{[]string{"a:1"}, nil, []string{"a:1"}},
		{nil, []string{"b:2"}, []string{"b:2"}},
		{[]string{"a:1", "b:2"}, []string{"b:2", "c:3"}, []string{"a:1", "b:2", "c:3"}},
	}
	for _, tc := range tests {
		if got := joinAddrs(tc.join, tc.remembered); !slices.Equal(got, tc.want) {
			t.Errorf("joinAddrs(%v, %v) = %v, want %v", tc.join, tc.remembered, got, tc.want)
		}
	}
}
