package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/worker"
)

// tlsCluster is n servers on TCP Raft and gossip with the given TLS files,
// at twice the LAN timeouts (handshakes on a loaded machine).
func tlsCluster(t *testing.T, n int, files func() certs.Files) *testcluster.Cluster {
	return testcluster.New(t, n, testcluster.TCP(), testcluster.Configure(func(_ int, cfg *agent.Config) {
		cfg.TimeoutScale, cfg.TLS = 4, files()
	}))
}

// testPKI is a CA in a temporary directory that issues certificates.
type testPKI struct {
	t      *testing.T
	dir    string
	caFile string
	ca     *certs.Authority
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p, err := certs.NewCA(1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caFile, keyFile, err := p.Write(dir, certs.CAFile, certs.CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certs.LoadAuthority(caFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{t: t, dir: dir, caFile: caFile, ca: ca}
}

// files issues a certificate and returns the TLS files of an agent using it.
func (p *testPKI) files(server, verifyIncoming bool) certs.Files {
	p.t.Helper()
	pem, err := p.ca.Issue(certs.Request{Server: server, Days: 1}, time.Now())
	if err != nil {
		p.t.Fatal(err)
	}
	prefix := "client"
	if server {
		prefix = "server"
	}
	certFile, keyFile, err := pem.WriteNumbered(p.dir, prefix)
	if err != nil {
		p.t.Fatal(err)
	}
	return certs.Files{CertFile: certFile, KeyFile: keyFile, CAFile: p.caFile, VerifyIncoming: verifyIncoming}
}

// clientTLS is a CLI-style client configuration with a client certificate.
func (p *testPKI) clientTLS() *tls.Config {
	p.t.Helper()
	tc, err := certs.Load(p.files(false, false))
	if err != nil {
		p.t.Fatal(err)
	}
	return tc.ServerClient()
}

func raftServers(t *testing.T, s *agent.Server) []string {
	t.Helper()
	f := s.Raft().GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, srv := range f.Configuration().Servers {
		ids = append(ids, string(srv.ID))
	}
	return ids
}

// TestHTTPSClusterEndToEnd: three servers with TLS on the API (client
// certificates required) and mutual TLS on Raft. A write sent to a
// follower is forwarded to the leader over HTTPS, every published HTTP
// address says https, a worker finds the servers through gossip and
// registers over HTTPS, and plain HTTP or a client without a certificate
// gets nowhere.
func TestHTTPSClusterEndToEnd(t *testing.T) {
	pki := newTestPKI(t)
	c := tlsCluster(t, 3, func() certs.Files { return pki.files(true, true) })
	leader := c.Leader()
	followers := c.Followers(leader)
	follower := followers[len(followers)-1]
	ctx := ctxTimeout(t, 20*time.Second)
	fc, err := api.New(follower.HTTPURL(), api.WithTLSConfig(pki.clientTLS()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fc.PutPool(ctx, api.Pool{Name: "tls"}); err != nil {
		t.Fatalf("write through a follower over https: %v", err)
	}
	if leader.Store().State().Pool("tls") == nil {
		t.Fatal("the forwarded write did not reach the leader's state")
	}
	l, err := fc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.HTTPAddr, "https://") {
		t.Errorf("leader httpAddr %q has no https scheme", l.HTTPAddr)
	}
	for _, m := range follower.Gossip().Members() {
		if !strings.HasPrefix(m.Meta.HTTPAddr, "https://") {
			t.Errorf("member %s publishes %q", m.Name, m.Meta.HTTPAddr)
		}
	}

	plain, _ := api.New("http://"+leader.HTTPAddr(), api.WithMaxRetries(0))
	if _, err := plain.Leader(ctx); err == nil {
		t.Error("plain http to a TLS server succeeded")
	}
	noCert, _ := api.New(leader.HTTPURL(), api.WithMaxRetries(0), api.WithTLSConfig(&tls.Config{RootCAs: mustPool(t, pki.caFile), MinVersion: tls.VersionTLS12}))
	if _, err := noCert.Leader(ctx); err == nil {
		t.Error("a client without a certificate was served although verify-incoming is on")
	}

	c.StartWorker(worker.Config{
		NodeID: "w1", Inventory: api.NodeSpec{Pool: "tls", TotalCapacity: 4},
		Join: []string{leader.Gossip().LocalAddr()}, TLS: pki.files(false, false),
		PollWait: time.Second,
	})
	poll.Eventually(t, 15*time.Second, "the worker to register over https", func() error {
		return poll.Check(leader.Store().State().Node("w1") != nil, "no node w1 in the leader's state")
	})
}

func mustPool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	pool, err := certs.LoadPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// TestRaftRefusesServersWithoutAValidCertificate: a server whose
// certificate comes from another CA joins gossip but never Raft, and a Raft
// transport presenting a client certificate of the right CA (our agent
// refuses to start with one, another program need not) gets nowhere
// either. The leader's probe and their own Raft RPCs fail the handshake,
// and the configuration keeps its three servers while the reconciler keeps
// seeing the intruder.
func TestRaftRefusesServersWithoutAValidCertificate(t *testing.T) {
	pki, other := newTestPKI(t), newTestPKI(t)
	c := tlsCluster(t, 3, func() certs.Files { return pki.files(true, false) })
	servers, leader := c.Servers(), c.Leader()
	intruder := c.AddServer(func(cfg *agent.Config) {
		cfg.NodeID, cfg.Join, cfg.TLS = "s4", []string{leader.Gossip().LocalAddr()}, other.files(true, false)
	})
	poll.Eventually(t, 15*time.Second, "the intruder alive in the leader's gossip view", func() error {
		if m, ok := leader.Gossip().Member(intruder.NodeID()); !ok || m.Status != gossip.StatusAlive {
			return fmt.Errorf("the leader sees %s as %q (known %v)", intruder.NodeID(), m.Status, ok)
		}
		return nil
	})
	refusedOnRaft(t, leader, "s4", other.files(true, false), intruder.Store().LocalAddr())
	client := rawTransport(t, "s5", pki.files(false, false))
	refusedOnRaft(t, leader, "s5", pki.files(false, false), string(client.LocalAddr()))
	// The reconciler runs every second: over several of its passes, which
	// leave nothing to wait for, the intruder must never be added. The
	// sleep lets that time pass on purpose.
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if ids := raftServers(t, s); len(ids) != 3 {
				t.Fatalf("%s's raft configuration is %v, want only s1..s3", s.NodeID(), ids)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if l := c.Leader(intruder); l.Raft().CurrentTerm() >= 1<<40 {
		t.Error("the intruder's vote request changed the cluster's term")
	}
}

// rawTransport is a Raft transport with files' certificate, closed with the test.
func rawTransport(t *testing.T, id string, files certs.Files) raft.Transport {
	t.Helper()
	tc, err := certs.LoadServer(files)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := raftstore.NewTransport(raftstore.Config{NodeID: id, RaftAddr: "127.0.0.1:0", TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.(interface{ Close() error }).Close() })
	return tr
}

// refusedOnRaft checks that the leader's probe of addr fails the
// certificate check, and that a vote request with files' certificate does
// not reach the leader's Raft.
func refusedOnRaft(t *testing.T, leader *agent.Server, id string, files certs.Files, addr string) {
	t.Helper()
	err := leader.Store().ProbePeer(addr)
	var ve *tls.CertificateVerificationError
	if !errors.As(err, &ve) && !errors.Is(err, certs.ErrNotServer) {
		t.Errorf("leader's probe of %s: %v, want a certificate verification error", id, err)
	}
	tr := rawTransport(t, id, files)
	var resp raft.RequestVoteResponse
	req := raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte(id), Addr: []byte(addr)}, Term: 1 << 40}
	if err := tr.RequestVote(raft.ServerID(leader.NodeID()), raft.ServerAddress(leader.Store().LocalAddr()), &req, &resp); err == nil {
		t.Errorf("%s's RequestVote reached the leader over Raft", id)
	}
}

// TestRaftTLSHandshakeDoesNotHang: a peer that connects to the Raft port
// and never speaks does not stop other connections from being served.
func TestRaftTLSHandshakeDoesNotHang(t *testing.T) {
	pki := newTestPKI(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s := tlsCluster(t, 1, func() certs.Files { return pki.files(true, false) }).Servers()[0]
	var d net.Dialer
	for range 20 { // silent connections, held open
		c, err := d.DialContext(ctx, "tcp", s.Store().LocalAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	if err := s.Store().ProbePeer(s.Store().LocalAddr()); err != nil {
		t.Fatalf("a proper handshake behind silent connections: %v", err)
	}
}
