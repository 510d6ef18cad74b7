package agent

import (
	"github.com/amserver/amserver/gossip"
)

// serversApply reports whether every server of the Raft configuration
// (voters and non-voters, id → address) applies replicated commands of
// level (fsm.CommandLevel), as its gossip metadata says. A server this
// server's gossip does not see alive counts as old: it may come back
// with an old binary, and the leader would send it what it cannot apply.
func serversApply(level int, config map[string]string, member func(id string) (gossip.Member, bool)) bool {
	if len(config) == 0 {
		return false
	}
	for id := range config {
		m, ok := member(id)
		if !ok || m.Status != gossip.StatusAlive || m.Meta.Role != gossip.RoleServer {
			return false
		}
		if max(m.Meta.FSMLevel, 1) < level { // 0: a release before the field, level 1
			return false
		}
	}
	return true
}

// clusterApplies is serversApply over this server's Raft configuration and
// gossip view; false when the configuration cannot be read. Without
// gossip (Deps.NoGossip: tests, one binary) every server is this one's.
func (s *Server) clusterApplies(level int) bool {
	if s.gossip == nil {
		return true
	}
	config, err := s.store.Voters()
	if err != nil {
		return false
	}
	return serversApply(level, config, s.gossip.Member)
}
