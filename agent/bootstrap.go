package agent

import (
	"errors"
	"slices"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/gossip"
)

// bootstrapSingle bootstraps a one-server cluster (dev mode), or one with the
// static Peers of the configuration.
func (s *Server) bootstrapSingle() {
	servers := []raft.Server{{ID: raft.ServerID(s.cfg.NodeID), Address: s.transport.LocalAddr(), Suffrage: raft.Voter}}
	if len(s.cfg.Peers) > 0 {
		servers = servers[:0]
		for _, id := range sortedKeys(s.cfg.Peers) {
			servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(s.cfg.Peers[id]), Suffrage: raft.Voter})
		}
	}
	s.bootstrap(servers)
}

// sortedKeys returns a map's keys in order, for deterministic iteration.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maybeBootstrap implements --bootstrap-expect: once gossip shows the
// expected number of servers, bootstrap Raft with exactly those. Every server
// that sees them proposes the identical configuration, which Raft accepts.
func (s *Server) maybeBootstrap() {
	if s.cfg.BootstrapExpect <= 0 || s.isBootstrapped() {
		return
	}
	var servers []raft.Server
	for _, m := range s.gossip.Members() {
		if m.Meta.Role == gossip.RoleServer && m.Status == gossip.StatusAlive && m.Meta.RaftAddr != "" {
			servers = append(servers, raft.Server{ID: raft.ServerID(m.Name), Address: raft.ServerAddress(m.Meta.RaftAddr), Suffrage: raft.Voter})
		}
	}
	if len(servers) < s.cfg.BootstrapExpect {
		return
	}
	slices.SortFunc(servers, func(a, b raft.Server) int { return strings.Compare(string(a.ID), string(b.ID)) })
	servers = servers[:s.cfg.BootstrapExpect]
	self := slices.ContainsFunc(servers, func(srv raft.Server) bool { return string(srv.ID) == s.cfg.NodeID })
	if !self {
		return // the servers that were chosen bootstrap; this one is added later by the leader
	}
	s.bootstrap(servers)
}

func (s *Server) isBootstrapped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bootstrapped
}

func (s *Server) bootstrap(servers []raft.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bootstrapped {
		return
	}
	err := s.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		s.logger.Error("raft bootstrap failed", "err", err)
		return
	}
	s.bootstrapped = true
	s.logger.Info("raft bootstrapped", "servers", len(servers))
}
