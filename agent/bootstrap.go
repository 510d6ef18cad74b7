package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// bootstrapStatic bootstraps a one-server cluster (dev mode), or one with
// the static Peers an embedder gave.
func (s *Server) bootstrapStatic() {
	voters := map[string]string{s.cfg.NodeID: s.store.LocalAddr()}
	if len(s.deps.Peers) > 0 {
		voters = s.deps.Peers
	}
	s.bootstrap(voters)
}

// maybeBootstrap implements --bootstrap-expect: once gossip shows the
// expected number of servers, bootstrap Raft with exactly those. Every server
// that sees them proposes the identical configuration, which Raft accepts.
func (s *Server) maybeBootstrap(ctx context.Context) {
	if s.cfg.BootstrapExpect <= 0 || s.isBootstrapped() {
		return
	}
	if by := s.clusterMember(); by != "" {
		s.joinExisting(by)
		return
	}
	var servers []gossip.Member
	for _, m := range s.gossip.Members() {
		if m.Meta.Role == gossip.RoleServer && m.Status == gossip.StatusAlive && m.Meta.RaftAddr != "" {
			servers = append(servers, m)
		}
	}
	if len(servers) < s.cfg.BootstrapExpect {
		return
	}
	slices.SortFunc(servers, func(a, b gossip.Member) int { return strings.Compare(a.Name, b.Name) })
	voters := map[string]string{}
	for _, m := range servers[:s.cfg.BootstrapExpect] {
		voters[m.Name] = m.Meta.RaftAddr
	}
	if _, self := voters[s.cfg.NodeID]; !self {
		return // the servers that were chosen bootstrap; this one is added later by the leader
	}
	// Gossip tags can lag (a wiped server that rejoins under its old name
	// may see its peers before their tags): ask every peer itself, and
	// bootstrap only when each one answers that it has no cluster either.
	by, unsure := s.peersInCluster(ctx, servers)
	switch {
	case by != "":
		s.joinExisting(by)
	case unsure != "":
		s.logger.Info("not bootstrapping yet: a peer did not say whether it runs a cluster", "peer", unsure)
	default:
		s.bootstrap(voters)
	}
}

// peerCheckTimeout bounds one peer's answer to "do you run a cluster?".
const peerCheckTimeout = 2 * time.Second

// peersInCluster asks every other server's /v1/health (public, so ACLs do
// not stand in the way) whether it is part of a Raft cluster: a Raft
// configuration, a known leader or any applied state says yes. It returns
// a server that is, or else one that did not answer.
func (s *Server) peersInCluster(ctx context.Context, servers []gossip.Member) (member, unsure string) {
	type answer struct {
		name       string
		member, ok bool
	}
	answers := make(chan answer, len(servers))
	asked := 0
	for _, m := range servers {
		if m.Name == s.cfg.NodeID {
			continue
		}
		asked++
		go func(m gossip.Member) {
			h, err := s.peerHealth(ctx, m.Meta.HTTPAddr)
			answers <- answer{name: m.Name, ok: err == nil, member: err == nil && (h.Peers > 0 || h.KnownLeader || h.Index > 0)}
		}(m)
	}
	for range asked {
		a := <-answers
		switch {
		case a.member && member == "":
			member = a.name
		case !a.ok && unsure == "":
			unsure = a.name
		}
	}
	return member, unsure
}

func (s *Server) peerHealth(ctx context.Context, addr string) (*api.Health, error) {
	if addr == "" {
		return nil, errors.New("no HTTP address in gossip")
	}
	opts := []api.Option{api.WithMaxRetries(0)}
	if s.deps.HTTPClient != nil {
		opts = append(opts, api.WithHTTPClient(s.deps.HTTPClient))
	} else if tc := s.forwardTLS(); tc != nil {
		opts = append(opts, api.WithTLSConfig(tc))
	}
	c, err := api.New(addr, opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, peerCheckTimeout)
	defer cancel()
	return c.Health(ctx)
}

func (s *Server) isBootstrapped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bootstrapped
}

func (s *Server) bootstrap(voters map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bootstrapped {
		return
	}
	if err := s.store.Bootstrap(voters); err != nil {
		s.logger.Error("raft bootstrap failed", "err", err)
		return
	}
	s.bootstrapped = true
	s.logger.Info("raft bootstrapped", "servers", len(voters))
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
	m := gossip.Meta{Role: gossip.RoleServer, RaftAddr: s.store.LocalAddr(), HTTPAddr: s.cfg.HTTPAdvertise, FSMLevel: fsm.CommandLevel}
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
	for !s.store.HasLeader() {
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
