package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Files names the PEM files of one agent's TLS setup.
type Files struct {
	CertFile string
	KeyFile  string
	// CAFile is the bundle of CA certificates peers must chain to.
	CAFile string
	// VerifyIncoming requires a client certificate on the HTTP API. Raft
	// always requires one.
	VerifyIncoming bool
	// ServerName is the DNS name a server certificate must carry
	// (DefaultServerName when empty).
	ServerName string
}

// Enabled reports whether a certificate is configured, which makes a
// server's HTTP API HTTPS-only and its Raft transport mutual TLS.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" }

// TLS is a loaded configuration that Reload can refresh from its files
// while connections are served: every tls.Config it hands out reads the
// current certificate and CA when a handshake happens, so a certificate
// rotated on disk takes effect with the next handshake, without a
// restart. Its methods return a fresh *tls.Config each time.
type TLS struct {
	files      Files
	serverName string
	verifyIn   bool
	cur        atomic.Pointer[material]
}

// material is what Reload swaps: the certificate (nil for a client with
// only a CA) and the CA pool.
type material struct {
	cert *tls.Certificate
	pool *x509.CertPool
}

// LoadServer loads what a server needs: its certificate, its key and the CA.
func LoadServer(f Files) (*TLS, error) {
	if f.CertFile == "" || f.KeyFile == "" || f.CAFile == "" {
		return nil, errors.New("certs: TLS on a server needs a certificate, its key and the CA (--tls-cert, --tls-key, --tls-ca)")
	}
	return Load(f)
}

// Load loads a CA and, when both are named, a certificate and key (a
// worker or CLI may run with the CA alone).
func Load(f Files) (*TLS, error) {
	if f.CAFile == "" {
		return nil, errors.New("certs: a CA certificate is required to verify peers")
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("certs: a certificate and its key go together")
	}
	t := &TLS{files: f, serverName: f.ServerName, verifyIn: f.VerifyIncoming}
	if t.serverName == "" {
		t.serverName = DefaultServerName
	}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the certificate, key and CA again. On any error the
// material in use stays, and the error says what could not be read.
func (t *TLS) Reload() error {
	pool, err := LoadPool(t.files.CAFile)
	if err != nil {
		return err
	}
	m := &material{pool: pool}
	if t.files.CertFile != "" {
		pair, err := readPair(t.files.CertFile, t.files.KeyFile)
		if err != nil {
			return err
		}
		m.cert = &pair
	}
	t.cur.Store(m)
	return nil
}

// LoadPool reads a PEM bundle of CA certificates.
func LoadPool(caFile string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("certs: %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

func readPair(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: load %s and %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// ServerName is the DNS name server certificates carry.
func (t *TLS) ServerName() string { return t.serverName }

// Certificate is the certificate in use (nil without one).
func (t *TLS) Certificate() *tls.Certificate { return t.cur.Load().cert }

// CheckServes is nil when the certificate in use is one the cluster accepts
// from a server (the CA's, the server name, server use), as servers check a
// worker's log endpoint; else why not.
func (t *TLS) CheckServes() error {
	c := t.cur.Load().cert
	if c == nil {
		return fmt.Errorf("certs: %w: no certificate", ErrNotServer)
	}
	chain := make([]*x509.Certificate, 0, len(c.Certificate))
	for _, der := range c.Certificate {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("certs: parse certificate: %w", err)
		}
		chain = append(chain, cert)
	}
	return t.verifyServerPeer(tls.ConnectionState{PeerCertificates: chain})
}

func (t *TLS) certs() []tls.Certificate {
	if c := t.cur.Load().cert; c != nil {
		return []tls.Certificate{*c}
	}
	return nil
}

// getClientCertificate presents the current certificate.
func (t *TLS) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c := t.cur.Load().cert; c != nil {
		return c, nil
	}
	return &tls.Certificate{}, nil // none: the server decides whether that will do
}

// HTTPServer is the API's listener configuration: TLS 1.2+, and client
// certificates verified against the CA when given, required with
// VerifyIncoming.
func (t *TLS) HTTPServer() *tls.Config {
	auth := tls.VerifyClientCertIfGiven
	if t.verifyIn {
		auth = tls.RequireAndVerifyClientCert
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: t.certs(), ClientCAs: t.cur.Load().pool, ClientAuth: auth}, nil
	}}
}

// ServerClient is for calls to a server's API from inside the cluster
// (forwarding to the leader, workers): the server must present a server
// certificate, whatever address it was reached at, and we present ours.
// Verification happens in VerifyConnection against the current CA (a
// client's RootCAs cannot change after the config is made), so the
// standard verification is switched off in favour of it, not dropped.
func (t *TLS) ServerClient() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12, GetClientCertificate: t.getClientCertificate, ServerName: t.serverName,
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies the chain and name against the current CA
		VerifyConnection:   t.verifyServerPeer,
	}
}

// RaftServer accepts Raft connections only from peers that present a server
// certificate of the CA.
func (t *TLS) RaftServer() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{
			MinVersion: tls.VersionTLS12, Certificates: t.certs(),
			ClientCAs: t.cur.Load().pool, ClientAuth: tls.RequireAndVerifyClientCert,
			VerifyConnection: t.verifyServerPeer,
		}, nil
	}}
}

// RaftClient dials Raft peers, which must present a server certificate of
// the CA; the address dialled plays no part in it.
func (t *TLS) RaftClient() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12, GetClientCertificate: t.getClientCertificate, ServerName: t.serverName,
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies the chain and name against the current CA
		VerifyConnection:   t.verifyServerPeer,
	}
}

// ErrNotServer rejects a peer whose certificate lacks the server name.
var ErrNotServer = errors.New("peer certificate is not a server certificate")

// verifyServerPeer checks, on both ends of a Raft connection, that the peer
// certificate chains to the CA, carries the server name and may serve. It
// runs for resumed sessions too, unlike VerifyPeerCertificate.
func (t *TLS) verifyServerPeer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("certs: %w: none presented", ErrNotServer)
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: t.cur.Load().pool, Intermediates: inter, DNSName: t.serverName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("certs: %w (%q, want DNS name %s): %w", ErrNotServer, leaf.Subject.CommonName, t.serverName, err)
	}
	return nil
}
