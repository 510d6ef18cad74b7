package raftstore

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/internal/certs"
)

// testServerTLS is a server certificate of a fresh CA.
func testServerTLS(t *testing.T) *certs.TLS {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA(1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caFile, keyFile, err := ca.Write(dir, certs.CAFile, certs.CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := certs.LoadAuthority(caFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := auth.Issue(certs.Request{Server: true, Days: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, certKey, err := pem.WriteNumbered(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := certs.LoadServer(certs.Files{CertFile: certFile, KeyFile: certKey, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestRaftTLSDialToSilentPeerTimesOut: a peer that accepts TCP but never
// answers the handshake fails the dial within its timeout.
func TestRaftTLSDialToSilentPeerTimesOut(t *testing.T) {
	l, err := newTLSStreamLayer("127.0.0.1:0", nil, testServerTLS(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := l.Dial(raft.ServerAddress(silent.Addr().String()), 300*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a handshake with a silent peer succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dial hung past its timeout")
	}
}
