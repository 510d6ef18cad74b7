package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/amserver/amserver/gossip"
)

// gossipPeersFile, in a server's data directory, lists the other servers'
// gossip addresses last seen alive. A server started again without --join
// (the first server of a cluster usually has none) joins them, or it would
// sit alone in gossip: the others do not look for a member that left or
// died, and the leader cannot add back a server it cannot see.
const gossipPeersFile = "gossip-peers.json"

// aliveServerAddrs are the gossip addresses of the live servers other than
// self, sorted.
func aliveServerAddrs(members []gossip.Member, self string) []string {
	var out []string
	for _, m := range members {
		if m.Name != self && m.Meta.Role == gossip.RoleServer && m.Status == gossip.StatusAlive {
			out = append(out, m.Address())
		}
	}
	slices.Sort(out)
	return out
}

// loadGossipPeers reads the remembered addresses; none when the file is
// missing or unreadable (the server then relies on --join alone).
func loadGossipPeers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, gossipPeersFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read gossip peers: %w", err)
	}
	var addrs []string
	if err := json.Unmarshal(b, &addrs); err != nil {
		return nil, fmt.Errorf("decode %s: %w", gossipPeersFile, err)
	}
	return addrs, nil
}

// saveGossipPeers writes addrs atomically (a crash leaves the old list).
func saveGossipPeers(dir string, addrs []string) error {
	b, err := json.Marshal(addrs)
	if err != nil {
		return fmt.Errorf("encode gossip peers: %w", err)
	}
	tmp := filepath.Join(dir, gossipPeersFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write gossip peers: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, gossipPeersFile)); err != nil {
		return fmt.Errorf("write gossip peers: %w", err)
	}
	return nil
}

// joinAddrs is --join followed by the remembered peers it does not name.
func joinAddrs(join, remembered []string) []string {
	out := slices.Clone(join)
	for _, a := range remembered {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// rememberGossipPeers saves the live servers when they changed. An empty
// set is never saved: a server alone (its peers restarting) keeps the list
// it will need.
func (s *Server) rememberGossipPeers() {
	if s.cfg.DataDir == "" {
		return
	}
	s.peersMu.Lock() // watchGossip and Shutdown
	defer s.peersMu.Unlock()
	addrs := aliveServerAddrs(s.gossip.Members(), s.cfg.NodeID)
	if len(addrs) == 0 || slices.Equal(addrs, s.gossipPeers) {
		return
	}
	if err := saveGossipPeers(s.cfg.DataDir, addrs); err != nil {
		s.logger.Warn("remembering the other servers' gossip addresses failed", "err", err)
		return
	}
	s.gossipPeers = addrs
}
