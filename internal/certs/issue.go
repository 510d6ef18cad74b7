// Package certs is amserver's certificates: a small CA that issues server
// and client certificates (so no openssl is needed), and the TLS
// configurations built from them for the HTTP API and the Raft transport.
//
// A server certificate carries the DNS name that marks it as a server
// (DefaultServerName, or the cluster's own); both ends of a Raft connection
// require it of the other, so a client certificate signed by the same CA
// cannot pose as a server.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// DefaultServerName is the DNS name every server certificate carries and
// every server checks for on its peers.
const DefaultServerName = "server.amserver"

// File names the tooling writes.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// PEM is a certificate and its private key, PEM encoded.
type PEM struct {
	Cert []byte
	Key  []byte
}

// NewCA creates a self-signed ECDSA P-256 certificate authority valid for
// the given number of days from now.
func NewCA(days int, now time.Time) (PEM, error) {
	if days <= 0 {
		return PEM{}, fmt.Errorf("certs: CA validity must be at least one day, got %d", days)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return PEM{}, fmt.Errorf("certs: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return PEM{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "amserver CA " + serial.Text(16)[:8], Organization: []string{"amserver"}},
		NotBefore:             now.Add(-time.Minute), // tolerate small clock skew between hosts
		NotAfter:              now.AddDate(0, 0, days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return PEM{}, fmt.Errorf("certs: sign CA: %w", err)
	}
	return encode(der, key)
}

// Authority is a loaded CA that can issue certificates.
type Authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// LoadAuthority reads a CA certificate and its key (as written by NewCA).
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	pair, err := readPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("certs: parse CA certificate %s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: %s is not a CA certificate", certFile)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("certs: CA key %s is %T, want an ECDSA key", keyFile, pair.PrivateKey)
	}
	return &Authority{cert: cert, key: key}, nil
}

// Request describes a certificate to issue.
type Request struct {
	// Server issues a server certificate: DNS SAN ServerName (default
	// DefaultServerName), localhost and 127.0.0.1, usable for both server and
	// client authentication (a server dials its peers too). Otherwise a
	// client certificate with no server name and client authentication only.
	Server     bool
	ServerName string
	// Names are extra DNS names or IP addresses for the SAN list.
	Names []string
	Days  int
}

// Issue signs a new certificate with a fresh ECDSA P-256 key.
func (a *Authority) Issue(req Request, now time.Time) (PEM, error) {
	if req.Days <= 0 {
		return PEM{}, fmt.Errorf("certs: certificate validity must be at least one day, got %d", req.Days)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return PEM{}, fmt.Errorf("certs: generate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return PEM{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		NotBefore:      now.Add(-time.Minute),
		NotAfter:       now.AddDate(0, 0, req.Days),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		SubjectKeyId:   keyID(&key.PublicKey),
		AuthorityKeyId: a.cert.SubjectKeyId,
	}
	names := req.Names
	if req.Server {
		name := req.ServerName
		if name == "" {
			name = DefaultServerName
		}
		tmpl.Subject = pkix.Name{CommonName: name, Organization: []string{"amserver"}}
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		names = append([]string{name, "localhost", "127.0.0.1"}, names...)
	} else {
		tmpl.Subject = pkix.Name{CommonName: "client.amserver " + serial.Text(16)[:8], Organization: []string{"amserver"}}
	}
	if err := addNames(tmpl, names); err != nil {
		return PEM{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return PEM{}, fmt.Errorf("certs: sign certificate: %w", err)
	}
	return encode(der, key)
}

// addNames puts each name in the IP or DNS SAN list, once.
func addNames(tmpl *x509.Certificate, names []string) error {
	for _, n := range names {
		if n == "" {
			return errors.New("certs: empty name")
		}
		if ip := net.ParseIP(n); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
			continue
		}
		if !slices.Contains(tmpl.DNSNames, n) {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	return nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // never zero
}

// keyID is the SHA-256 prefix of the public key, for the key identifiers.
func keyID(pub *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

func encode(der []byte, key *ecdsa.PrivateKey) (PEM, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return PEM{}, fmt.Errorf("certs: encode key: %w", err)
	}
	return PEM{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Write stores p as dir/certName and dir/keyName. The key is written 0600.
// Existing files are never overwritten: replacing a CA key by accident
// would orphan every certificate it signed.
func (p PEM) Write(dir, certName, keyName string) (certPath, keyPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("certs: create %s: %w", dir, err)
	}
	certPath, keyPath = filepath.Join(dir, certName), filepath.Join(dir, keyName)
	for _, path := range []string{certPath, keyPath} {
		if exists(path) {
			return "", "", fmt.Errorf("certs: %s already exists; remove it or choose another --dir", path)
		}
	}
	if err := writeNew(keyPath, p.Key, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(certPath, p.Cert, 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// WriteNumbered stores p as dir/<prefix>-N.pem and dir/<prefix>-N-key.pem
// with the first N whose files do not exist yet, so that issuing a
// certificate per server in one directory never overwrites another.
func (p PEM) WriteNumbered(dir, prefix string) (certPath, keyPath string, err error) {
	for n := 0; n < 10000; n++ {
		certName, keyName := fmt.Sprintf("%s-%d.pem", prefix, n), fmt.Sprintf("%s-%d-key.pem", prefix, n)
		if exists(filepath.Join(dir, certName)) || exists(filepath.Join(dir, keyName)) {
			continue
		}
		return p.Write(dir, certName, keyName)
	}
	return "", "", fmt.Errorf("certs: no free %s-N.pem name in %s", prefix, dir)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("certs: create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}
