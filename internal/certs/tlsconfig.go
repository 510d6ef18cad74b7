package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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

// TLS is a loaded configuration. Its methods return a fresh *tls.Config
// each time, so callers may change what they get.
type TLS struct {
	cert       *tls.Certificate // nil: a client with only a CA
	pool       *x509.CertPool
	serverName string
	verifyIn   bool
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
	pool, err := LoadPool(f.CAFile)
	if err != nil {
		return nil, err
	}
	t := &TLS{pool: pool, serverName: f.ServerName, verifyIn: f.VerifyIncoming}
	if t.serverName == "" {
		t.serverName = DefaultServerName
	}
	if f.CertFile != "" {
		pair, err := readPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, err
		}
		t.cert = &pair
	}
	return t, nil
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

func (t *TLS) certs() []tls.Certificate {
	if t.cert == nil {
		return nil
	}
	return []tls.Certificate{*t.cert}
}

// HTTPServer is the API's listener configuration: TLS 1.2+, and client
// certificates verified against the CA when given, required with
// VerifyIncoming.
func (t *TLS) HTTPServer() *tls.Config {
	auth := tls.VerifyClientCertIfGiven
	if t.verifyIn {
		auth = tls.RequireAndVerifyClientCert
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: t.certs(), ClientCAs: t.pool, ClientAuth: auth}
}

// ServerClient is for calls to a server's API from inside the cluster
// (forwarding to the leader, workers): the server must present a server
// certificate, whatever address it was reached at, and we present ours.
func (t *TLS) ServerClient() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: t.certs(), RootCAs: t.pool, ServerName: t.serverName}
}

// RaftServer accepts Raft connections only from peers that present a server
// certificate of the CA.
func (t *TLS) RaftServer() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12, Certificates: t.certs(),
		ClientCAs: t.pool, ClientAuth: tls.RequireAndVerifyClientCert,
		VerifyConnection: t.verifyServerPeer,
	}
}

// RaftClient dials Raft peers, which must present a server certificate of
// the CA; the address dialled plays no part in it.
func (t *TLS) RaftClient() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12, Certificates: t.certs(),
		RootCAs: t.pool, ServerName: t.serverName,
		VerifyConnection: t.verifyServerPeer,
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
		Roots: t.pool, Intermediates: inter, DNSName: t.serverName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("certs: %w (%q, want DNS name %s): %w", ErrNotServer, leaf.Subject.CommonName, t.serverName, err)
	}
	return nil
}
