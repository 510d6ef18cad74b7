package agent

import (
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
// missing (the server then relies on --join alone).
func loadGossipPeers(dir string) ([]string, error) {
	var addrs []string
	_, err := readDataFile(dir, gossipPeersFile, &addrs)
	return addrs, err
}

// saveGossipPeers writes addrs atomically (a crash leaves the old list).
func saveGossipPeers(dir string, addrs []string) error {
	return writeDataFile(dir, gossipPeersFile, addrs)
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
