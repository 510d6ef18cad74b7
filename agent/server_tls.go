package agent

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"time"
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

// probePeer checks a would-be voter's Raft certificate (mutual TLS only).
func (s *Server) probePeer(addr string) error {
	if s.raftTLS == nil {
		return nil
	}
	return s.raftTLS.probe(addr)
}

// probeRetry is how long the leader waits before probing an address that
// failed again: the reconciler runs every second and also writes node
// status, which a probe of a silent address (up to the handshake timeout)
// must not hold up each time.
const probeRetry = 10 * time.Second

// probeVoter is probePeer for the reconciler: a failure is remembered per
// address for probeRetry, during which the address is refused at once
// (errProbeBackoff) and nothing is logged again.
func (s *Server) probeVoter(addr string) error {
	if s.raftTLS == nil {
		return nil
	}
	s.probeMu.Lock()
	failed, ok := s.probeFailed[addr]
	s.probeMu.Unlock()
	if ok && time.Since(failed) < probeRetry {
		return errProbeBackoff
	}
	err := s.probePeer(addr)
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if err != nil {
		if s.probeFailed == nil {
			s.probeFailed = map[string]time.Time{}
		}
		s.probeFailed[addr] = time.Now()
		return err
	}
	delete(s.probeFailed, addr)
	return nil
}

// errProbeBackoff: the address failed its certificate probe recently.
var errProbeBackoff = errors.New("raft certificate probe failed recently")
