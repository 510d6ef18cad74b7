package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// testCA writes a CA into dir and returns it loaded.
func testCA(t *testing.T, dir string) *Authority {
	t.Helper()
	ca, err := NewCA(30, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err := ca.Write(dir, CAFile, CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := LoadAuthority(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func parse(t *testing.T, p PEM) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(p.Cert)
	if block == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueNames(t *testing.T) {
	a := testCA(t, t.TempDir())
	tests := []struct {
		name    string
		req     Request
		wantDNS []string
		wantIPs []string
		server  bool
	}{
		{"server default", Request{Server: true, Days: 1}, []string{DefaultServerName, "localhost"}, []string{"127.0.0.1"}, true},
		{"server custom name and extras", Request{Server: true, ServerName: "server.eu.amserver", Names: []string{"s1.example", "10.0.0.5", "localhost"}, Days: 1},
			[]string{"server.eu.amserver", "localhost", "s1.example"}, []string{"127.0.0.1", "10.0.0.5"}, true},
		{"client", Request{Days: 1}, nil, nil, false},
		{"client with a name", Request{Names: []string{"ops.example"}, Days: 1}, []string{"ops.example"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Issue(tt.req, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			c := parse(t, p)
			if !slices.Equal(c.DNSNames, tt.wantDNS) {
				t.Errorf("DNS names %v, want %v", c.DNSNames, tt.wantDNS)
			}
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, tt.wantIPs) {
				t.Errorf("IPs %v, want %v", ips, tt.wantIPs)
			}
			if got := slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth); got != tt.server {
				t.Errorf("server auth usage %v, want %v", got, tt.server)
			}
			if !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
				t.Error("every certificate must allow client authentication")
			}
			if _, err := tls.X509KeyPair(p.Cert, p.Key); err != nil {
				t.Errorf("certificate and key do not match: %v", err)
			}
		})
	}
}

func TestIssueRejectsBadInput(t *testing.T) {
	a := testCA(t, t.TempDir())
	if _, err := a.Issue(Request{Days: 0}, time.Now()); err == nil {
		t.Error("zero days accepted")
	}
	if _, err := a.Issue(Request{Days: 1, Names: []string{""}}, time.Now()); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := NewCA(-1, time.Now()); err == nil {
		t.Error("negative CA days accepted")
	}
}

func TestWriteModesAndNoOverwrite(t *testing.T) {
	dir := t.TempDir()
	a := testCA(t, dir)
	p, err := a.Issue(Request{Server: true, Days: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c0, k0, err := p.WriteNumbered(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	c1, _, err := p.WriteNumbered(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(c0) != "server-0.pem" || filepath.Base(k0) != "server-0-key.pem" || filepath.Base(c1) != "server-1.pem" {
		t.Errorf("names %s %s %s", c0, k0, c1)
	}
	info, err := os.Stat(k0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", info.Mode().Perm())
	}
	if _, _, err := p.Write(dir, CAFile, "x.pem"); err == nil {
		t.Error("overwrote the CA certificate")
	}
	if _, err := LoadAuthority(c0, k0); err == nil {
		t.Error("a server certificate loaded as a CA")
	}
}

// pipeHandshake runs a Raft-style exchange over loopback TCP and returns
// the client's and the server's errors.
func pipeHandshake(t *testing.T, client, server *tls.Config) (clientErr, serverErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = raw.Close() }()
		_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
		s := tls.Server(raw, server)
		buf := make([]byte, 1)
		if err = s.HandshakeContext(t.Context()); err == nil {
			if _, err = s.Read(buf); err == nil { // TLS 1.3: the client's certificate is checked by now
				_, err = s.Write(buf)
			}
		}
		done <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	c := tls.Client(raw, client)
	if clientErr = c.HandshakeContext(t.Context()); clientErr == nil {
		if _, clientErr = c.Write([]byte{1}); clientErr == nil {
			_, clientErr = c.Read(make([]byte, 1))
		}
	}
	_ = raw.Close()
	return clientErr, <-done
}

func loadIssued(t *testing.T, dir string, a *Authority, caFile string, req Request) *TLS {
	t.Helper()
	req.Days = 1
	p, err := a.Issue(req, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err := p.WriteNumbered(dir, "cert")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := LoadServer(Files{CertFile: certPath, KeyFile: keyPath, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func TestRaftConfigsRequireServerCertificates(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	a, b := testCA(t, dir), testCA(t, other)
	caFile := filepath.Join(dir, CAFile)
	good1 := loadIssued(t, dir, a, caFile, Request{Server: true})
	good2 := loadIssued(t, dir, a, caFile, Request{Server: true})
	client := loadIssued(t, dir, a, caFile, Request{})
	foreign := loadIssued(t, other, b, filepath.Join(other, CAFile), Request{Server: true})

	if cerr, serr := pipeHandshake(t, good1.RaftClient(), good2.RaftServer()); cerr != nil || serr != nil {
		t.Fatalf("two servers of one CA: client %v, server %v", cerr, serr)
	}
	// A client certificate dialing a server: the server refuses it.
	if cerr, serr := pipeHandshake(t, client.RaftClient(), good1.RaftServer()); !errors.Is(serr, ErrNotServer) || cerr == nil {
		t.Errorf("client certificate on Raft: server %v (want ErrNotServer), client %v (want an error)", serr, cerr)
	}
	// A server dialing a peer that presents a client certificate.
	if cerr, _ := pipeHandshake(t, good1.RaftClient(), client.RaftServer()); !isVerifyError(cerr) {
		t.Errorf("dialing a client certificate: %v, want a verification error", cerr)
	}
	// Another CA, either way round.
	if _, serr := pipeHandshake(t, foreign.RaftClient(), good1.RaftServer()); serr == nil {
		t.Error("server accepted a certificate of another CA")
	}
	if cerr, _ := pipeHandshake(t, good1.RaftClient(), foreign.RaftServer()); !isVerifyError(cerr) {
		t.Errorf("dialing a certificate of another CA: %v, want a verification error", cerr)
	}
}

// isVerifyError: the standard check (ServerName) or ours (VerifyConnection)
// refused the peer's certificate.
func isVerifyError(err error) bool {
	var ve *tls.CertificateVerificationError
	return errors.Is(err, ErrNotServer) || errors.As(err, &ve)
}

func TestLoadRequiresPieces(t *testing.T) {
	if _, err := LoadServer(Files{CertFile: "c.pem", KeyFile: "k.pem"}); err == nil {
		t.Error("server TLS without a CA accepted")
	}
	if _, err := Load(Files{CAFile: "ca.pem", CertFile: "c.pem"}); err == nil {
		t.Error("certificate without key accepted")
	}
	if (Files{}).Enabled() {
		t.Error("empty files enabled")
	}
}

// CheckServes tells a server certificate of the CA from a client one and
// from one of another CA (a worker warns at start when its log endpoint
// would be refused).
func TestCheckServes(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	a, b := testCA(t, dir), testCA(t, other)
	caFile := filepath.Join(dir, CAFile)
	issued := loadIssued(t, other, b, filepath.Join(other, CAFile), Request{Server: true})
	foreign, err := LoadServer(Files{CertFile: issued.files.CertFile, KeyFile: issued.files.KeyFile, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	caOnly, err := Load(Files{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tc   *TLS
		ok   bool
	}{
		{"server", loadIssued(t, dir, a, caFile, Request{Server: true}), true},
		{"client", loadIssued(t, dir, a, caFile, Request{}), false},
		{"another CA's server", foreign, false},
		{"CA only", caOnly, false},
	}
	for _, tc := range cases {
		if err := tc.tc.CheckServes(); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
