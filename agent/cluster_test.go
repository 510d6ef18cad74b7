package agent

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/api"
)

// testCluster is n in-process servers on raft's in-memory transport, each
// with a real HTTP API on loopback.
type testCluster struct {
	t          *testing.T
	servers    []*Server
	transports []*raft.InmemTransport
}

func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return newTestClusterWith(t, n, nil)
}

// newTestClusterWith lets a test change each server's configuration.
func newTestClusterWith(t *testing.T, n int, configure func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	peers, httpAddrs := map[string]string{}, map[string]string{}
	listeners := make([]net.Listener, n)
	for i := range n {
		id := fmt.Sprintf("s%d", i+1)
		addr, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		c.transports = append(c.transports, tr)
		peers[id] = string(addr)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[i] = ln
		httpAddrs[id] = ln.Addr().String()
	}
	for i, a := range c.transports {
		for j, b := range c.transports {
			if i != j {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	for i := range n {
		id := fmt.Sprintf("s%d", i+1)
		cfg := Config{
			NodeID: id, Bootstrap: true, TimeoutScale: 2, SnapshotThreshold: 64, TrailingLogs: 32,
		}
		if configure != nil {
			configure(&cfg)
		}
		s, err := NewServer(cfg, Deps{
			HTTPListener: listeners[i], Transport: c.transports[i], NoGossip: true, Peers: peers, PeerHTTP: httpAddrs,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		c.servers = append(c.servers, s)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			_ = s.Kill()
		}
	})
	return c
}

// leader waits for a ready leader among the servers not in skip.
func (c *testCluster) leader(skip ...*Server) *Server {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.servers {
			if !contains(skip, s) && s.store.IsLeader() && s.store.Ready() {
				return s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader elected")
	return nil
}

func (c *testCluster) followers(leader *Server) []*Server {
	var out []*Server
	for _, s := range c.servers {
		if s != leader {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []*Server, s *Server) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func client(t *testing.T, s *Server) *api.Client {
	t.Helper()
	c, err := api.New(s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// isolate cuts a server's raft links both ways, leaving HTTP untouched so a
// client can still reach it (and a stale read would be visible).
func (c *testCluster) isolate(s *Server) {
	idx := c.index(s)
	c.transports[idx].DisconnectAll()
	for i, tr := range c.transports {
		if i != idx {
			tr.Disconnect(c.transports[idx].LocalAddr())
		}
	}
}

// heal reconnects a server isolated with isolate.
func (c *testCluster) heal(s *Server) {
	idx := c.index(s)
	for i, tr := range c.transports {
		if i != idx {
			tr.Connect(c.transports[idx].LocalAddr(), c.transports[idx])
			c.transports[idx].Connect(tr.LocalAddr(), tr)
		}
	}
}

func (c *testCluster) index(s *Server) int {
	for i, x := range c.servers {
		if x == s {
			return i
		}
	}
	c.t.Fatal("server not in cluster")
	return -1
}

func testPool(name string) api.Pool { return api.Pool{Name: name} }

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
