package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/amserver/amserver/gossip"
)

// secureHTTP wraps the API listener in TLS when TLS is configured, and
// gives the advertised address its scheme. The scheme travels with the
// address everywhere it is published (gossip metadata, /v1/status/leader,
// /v1/members), so forwarding servers, workers and clients all reach an
// HTTPS server over HTTPS without guessing.
func (s *Server) secureHTTP(ln net.Listener, advertise string) (net.Listener, string) {
	if s.tls == nil {
		return ln, advertise
	}
	if !strings.Contains(advertise, "://") {
		advertise = "https://" + advertise
	}
	return tls.NewListener(ln, s.tls.HTTPServer()), advertise
}

// withScheme makes a configured peer address (PeerHTTP) an https URL when
// this cluster serves HTTPS; gossip already publishes the scheme.
func (s *Server) withScheme(addr string) string {
	if s.tls == nil || addr == "" || strings.Contains(addr, "://") {
		return addr
	}
	return "https://" + addr
}

// forwardTLS is the client configuration for forwarding to the leader: the
// leader must present a server certificate, and we present ours (the API
// may require client certificates).
func (s *Server) forwardTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.ServerClient()
}

// HTTPURL is the API's URL on the listening address, with its scheme.
func (s *Server) HTTPURL() string {
	scheme := "http://"
	if s.tls != nil {
		scheme = "https://"
	}
	return scheme + s.HTTPAddr()
}

// serverAddresses are the servers' gossip addresses (for a new worker's
// --join) and HTTP addresses (for its --servers), which the elastic duty
// hands to provisioners.
func (s *Server) serverAddresses() (join, servers []string) {
	if s.gossip == nil {
		servers = append(servers, s.cfg.HTTPAdvertise)
		for id, addr := range s.deps.PeerHTTP {
			if id != s.cfg.NodeID {
				servers = append(servers, addr)
			}
		}
		slices.Sort(servers)
		return nil, servers
	}
	for _, m := range s.gossip.Members() {
		if m.Meta.Role == gossip.RoleServer && m.Status == gossip.StatusAlive {
			join = append(join, m.Address())
			if m.Meta.HTTPAddr != "" {
				servers = append(servers, m.Meta.HTTPAddr)
			}
		}
	}
	if len(join) == 0 {
		join = []string{s.gossip.LocalAddr()}
		servers = []string{s.cfg.HTTPAdvertise}
	}
	slices.Sort(join)
	slices.Sort(servers)
	return join, servers
}

// Reload applies what an operator may change without a restart (SIGHUP):
// the TLS certificate, key and CA are read again (HTTP, Raft and
// forwarding pick them up at their next handshake), and the configured
// ACL tokens are replaced; a leader writes the new ones at once. Turning
// ACLs on or off still takes a restart. Nothing changes on an error.
func (s *Server) Reload(ctx context.Context, acl ACLConfig) error {
	if acl.Enabled != s.cfg.ACL.Enabled {
		return errors.New("agent: turning ACLs on or off takes a restart")
	}
	if err := acl.validate(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if s.tls != nil {
		if err := s.tls.Reload(); err != nil {
			return fmt.Errorf("agent: reload TLS: %w", err)
		}
	}
	s.leader.SetConfigTokens(acl.fsmTokens())
	if s.store.IsLeader() && s.store.Ready() {
		if err := s.leader.Prepare(ctx); err != nil {
			return fmt.Errorf("agent: write the reloaded ACL tokens: %w", err)
		}
	}
	s.logger.Info("configuration reloaded", "tls", s.tls != nil, "aclTokens", len(acl.Tokens))
	return nil
}
