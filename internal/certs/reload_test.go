package certs

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReloadRotatesWithoutRestart: a certificate replaced on disk is what
// the next handshake presents after Reload, on configs made before it; a
// failed Reload keeps serving the old one.
func TestReloadRotatesWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	a := testCA(t, dir)
	caFile := filepath.Join(dir, CAFile)
	issue := func() PEM {
		p, err := a.Issue(Request{Server: true, Days: 1}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second := issue(), issue()
	certPath, keyPath := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	write := func(p PEM) {
		if err := os.WriteFile(certPath, p.Cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyPath, p.Key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(first)
	srv, err := LoadServer(Files{CertFile: certPath, KeyFile: keyPath, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	peer := loadIssued(t, dir, a, caFile, Request{Server: true})
	serverCfg, clientCfg := srv.HTTPServer(), peer.ServerClient() // made before the rotation
	presented := func() []byte {
		t.Helper()
		var got []byte
		c := clientCfg.Clone()
		verify := c.VerifyConnection
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			got = cs.PeerCertificates[0].Raw
			return verify(cs)
		}
		if cerr, serr := pipeHandshake(t, c, serverCfg); cerr != nil || serr != nil {
			t.Fatalf("handshake: client %v, server %v", cerr, serr)
		}
		return got
	}
	if !bytes.Equal(presented(), parse(t, first).Raw) {
		t.Fatal("the first certificate is not the one presented")
	}
	write(second)
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(presented(), parse(t, second).Raw) {
		t.Fatal("after Reload the old certificate is still presented")
	}
	if err := os.WriteFile(keyPath, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(); err == nil {
		t.Fatal("a broken key file reloaded without error")
	}
	if !bytes.Equal(presented(), parse(t, second).Raw) {
		t.Fatal("a failed Reload changed the certificate in use")
	}
}
