package raftstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/internal/certs"
)

// raftHandshakeTimeout bounds a Raft TLS handshake either way, so a peer
// that connects and says nothing (or a wrong peer) never holds a transport.
const raftHandshakeTimeout = 5 * time.Second

// tlsStreamLayer is raft.NetworkTransport's StreamLayer over mutual TLS
// (PITFALLS: NetworkTransport has no TLS). Both ends require a server
// certificate of the cluster's CA (certs.TLS.RaftServer/RaftClient).
// Handshakes of accepted connections run off the accept loop, each with a
// deadline, and only connections that completed one reach Raft.
type tlsStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	logger    *slog.Logger

	conns     chan net.Conn
	ctx       context.Context // ended by Close, with the handshakes in flight
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

func newTLSStreamLayer(bind string, advertise net.Addr, tc *certs.TLS, logger *slog.Logger) (*tlsStreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if tcp, ok := advertise.(*net.TCPAddr); !ok || tcp.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("raft address %s is not advertisable: set an advertise address", advertise)
	}
	l := &tlsStreamLayer{
		ln: ln, advertise: advertise, server: tc.RaftServer(), client: tc.RaftClient(), logger: logger,
		conns: make(chan net.Conn),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *tlsStreamLayer) acceptLoop() {
	defer l.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.ctx.Done():
				return
			default:
			}
			// Out of descriptors and the like: back off and keep accepting,
			// as raft's own TCP stream layer does.
			l.logger.Warn("raft accept failed", "err", err, "backoff", backoff)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		l.wg.Add(1)
		go l.handshake(raw)
	}
}

// handshake completes the server side of one connection and hands it over.
func (l *tlsStreamLayer) handshake(raw net.Conn) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(l.ctx, raftHandshakeTimeout)
	defer cancel()
	conn := tls.Server(raw, l.server)
	if err := conn.HandshakeContext(ctx); err != nil {
		if l.ctx.Err() == nil { // not our own Close
			l.logger.Warn("raft TLS handshake refused", "remote", raw.RemoteAddr().String(), "err", err)
		}
		_ = raw.Close()
		return
	}
	select {
	case l.conns <- conn:
	case <-l.ctx.Done():
		_ = conn.Close()
	}
}

// Accept returns the next connection whose handshake succeeded.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections already handed to Raft are Raft's.
func (l *tlsStreamLayer) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.cancel()
		err = l.ln.Close()
		l.wg.Wait()
	})
	return err
}

// Addr is the advertised address, which Raft stores in its configuration.
func (l *tlsStreamLayer) Addr() net.Addr { return l.advertise }

// Dial connects to a peer and completes the handshake, which verifies that
// the peer presents a server certificate of the CA, within timeout.
func (l *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 || timeout > raftHandshakeTimeout {
		timeout = raftHandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{}, Config: l.client}
	conn, err := d.DialContext(ctx, "tcp", string(address))
	if err != nil {
		return nil, fmt.Errorf("raft TLS dial %s: %w", address, err)
	}
	return conn, nil
}

// probe checks that addr answers with a server certificate of the CA. The
// leader runs it before adding a voter: AddVoter does not contact the new
// server, so without it a server with a wrong certificate would still enter
// the configuration and count towards quorum while unable to vote.
func (l *tlsStreamLayer) probe(addr string) error {
	conn, err := l.Dial(raft.ServerAddress(addr), raftHandshakeTimeout)
	if err != nil {
		return err
	}
	return conn.Close()
}

// newTLSTransport is newTransport with mutual TLS.
func newTLSTransport(c *Config, adv net.Addr, tc *certs.TLS) (raft.Transport, *tlsStreamLayer, error) {
	stream, err := newTLSStreamLayer(c.RaftAddr, adv, tc, c.Logger.With("component", "raft-tls"))
	if err != nil {
		return nil, nil, err
	}
	t := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second,
		Logger: newHclogBridge(c.Logger, "raft-net", hclog.Warn),
	})
	return t, stream, nil
}

// probeRetry is how long the leader waits before probing an address that
// failed again: the reconciler runs every second and also writes node
// status, which a probe of a silent address (up to the handshake timeout)
// must not hold up each time.
const probeRetry = 10 * time.Second

// ErrProbeBackoff: the address failed its certificate probe recently, and
// is refused without another probe (and without another log line).
var ErrProbeBackoff = errors.New("raft certificate probe failed recently")

// ProbePeer checks a would-be voter's Raft certificate (mutual TLS only).
func (s *Store) ProbePeer(addr string) error {
	if s.stream == nil {
		return nil
	}
	return s.stream.probe(addr)
}

// probeVoter is ProbePeer for the reconciler: a failure is remembered per
// address for probeRetry, during which the address is refused at once.
func (s *Store) probeVoter(addr string) error {
	if s.stream == nil {
		return nil
	}
	s.probeMu.Lock()
	failed, ok := s.probeFailed[addr]
	s.probeMu.Unlock()
	if ok && time.Since(failed) < probeRetry {
		return ErrProbeBackoff
	}
	err := s.ProbePeer(addr)
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if err != nil {
		if s.probeFailed == nil {
			s.probeFailed = map[string]time.Time{}
		}
		s.probeFailed[addr] = time.Now()
		return fmt.Errorf("raft certificate of %s refused: %w", addr, err)
	}
	delete(s.probeFailed, addr)
	return nil
}
