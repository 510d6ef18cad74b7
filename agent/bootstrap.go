package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

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
	if by := s.clusterMember(); by != "" {
		s.joinExisting(by)
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

// raftMemberTag, in a server's gossip tags, says that it belongs to a Raft
// cluster that has had a leader. A fresh server with --bootstrap-expect
// that sees it (a replacement for a lost server, say) must not bootstrap a
// configuration of its own: it waits for the leader to add it.
const raftMemberTag = "raft"

// clusterMember names a live server that advertises raftMemberTag.
func (s *Server) clusterMember() string {
	for _, m := range s.gossip.Members() {
		if m.Name != s.cfg.NodeID && m.Meta.Role == gossip.RoleServer && m.Status == gossip.StatusAlive &&
			m.Meta.Tags[raftMemberTag] == "1" {
			return m.Name
		}
	}
	return ""
}

// joinExisting gives up bootstrapping for good: the existing cluster's
// leader adds this server (reconciler), and a configuration of its own
// would only start a rival election.
func (s *Server) joinExisting(by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bootstrapped {
		return
	}
	s.bootstrapped = true
	s.logger.Info("not bootstrapping: server is part of an existing cluster; waiting to be added", "seen", by)
}

// serverMeta is this server's gossip metadata.
func (s *Server) serverMeta(member bool) gossip.Meta {
	m := gossip.Meta{Role: gossip.RoleServer, RaftAddr: string(s.transport.LocalAddr()), HTTPAddr: s.cfg.HTTPAdvertise}
	if member {
		m.Tags = map[string]string{raftMemberTag: "1"}
	}
	return m
}

// advertiseMembership sets raftMemberTag once this server has seen a
// leader (a server restarted with Raft state has it from the start).
func (s *Server) advertiseMembership(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for s.raft.Leader() == "" {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.gossip.UpdateMeta(uctx, s.serverMeta(true)); err != nil && ctx.Err() == nil {
		s.logger.Warn("advertising Raft membership in gossip failed", "err", err)
	}
}
