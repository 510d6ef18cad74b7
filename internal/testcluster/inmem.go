package testcluster

import (
	"net"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/raftstore"
)

// memNet is the in-memory cluster's wiring: Raft transports linked to one
// another, stores that outlive a server, and fixed HTTP addresses that the
// servers know each other by (there is no gossip to tell them).
type memNet struct {
	transports []*raft.InmemTransport
	stores     []*raftstore.MemStores
	ids        []string
	peers      map[string]string // id → Raft address
	peerHTTP   map[string]string // id → HTTP address
	cut        map[int]bool      // servers cut off by Isolate
}

func (c *Cluster) startMem(n int) {
	c.t.Helper()
	m := &memNet{peers: map[string]string{}, peerHTTP: map[string]string{}, cut: map[int]bool{}}
	c.mem = m
	listeners := make([]net.Listener, n)
	defer func() { // a server that failed to start leaves the later listeners unused
		for _, ln := range listeners[len(c.servers):] {
			if ln != nil {
				_ = ln.Close()
			}
		}
	}()
	for i := range n {
		id := serverID(i)
		addr, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		m.transports, m.ids = append(m.transports, tr), append(m.ids, id)
		m.stores = append(m.stores, raftstore.NewMemStores())
		m.peers[id] = string(addr)
		listeners[i] = listen(c.t, "127.0.0.1:0")
		m.peerHTTP[id] = listeners[i].Addr().String()
	}
	for i := range n {
		m.link(i)
	}
	for i := range n {
		cfg := agent.Config{NodeID: m.ids[i], Bootstrap: true, TimeoutScale: 4, SnapshotThreshold: 64, TrailingLogs: 32}
		c.configure(i, &cfg)
		c.cfgs = append(c.cfgs, cfg)
		c.servers = append(c.servers, c.start(cfg, m.deps(i, listeners[i])))
	}
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("testcluster: listen on %s: %v", addr, err)
	}
	return ln
}

func (m *memNet) deps(i int, ln net.Listener) agent.Deps {
	return agent.Deps{
		HTTPListener: ln, Transport: m.transports[i], MemStores: m.stores[i], NoGossip: true,
		Peers: m.peers, PeerHTTP: m.peerHTTP,
	}
}

// link connects server i both ways with every server not cut off.
func (m *memNet) link(i int) {
	me := m.transports[i]
	for j, tr := range m.transports {
		if j != i && !m.cut[j] {
			tr.Connect(me.LocalAddr(), me)
			me.Connect(tr.LocalAddr(), tr)
		}
	}
}

// restartDeps gives restarted server i a new transport at its old address
// and a listener on its old HTTP address, over the stores it had.
func (m *memNet) restartDeps(t testing.TB, i int) agent.Deps {
	t.Helper()
	_, m.transports[i] = raft.NewInmemTransport(raft.ServerAddress(m.peers[m.ids[i]]))
	if !m.cut[i] {
		m.link(i)
	}
	return m.deps(i, listen(t, m.peerHTTP[m.ids[i]]))
}

func (c *Cluster) memNet(what string) *memNet {
	c.t.Helper()
	if c.mem == nil {
		c.t.Fatalf("testcluster: %s needs the in-memory transport (a cluster built without TCP)", what)
	}
	return c.mem
}

// Isolate cuts server s's Raft links both ways. Its HTTP API stays up, so
// a client still reaches it (and would see a stale read).
func (c *Cluster) Isolate(s *agent.Server) {
	c.t.Helper()
	m, i := c.memNet("Isolate"), c.index(s)
	m.cut[i] = true
	me := m.transports[i]
	me.DisconnectAll()
	for j, tr := range m.transports {
		if j != i {
			tr.Disconnect(me.LocalAddr())
		}
	}
}

// Heal restores the Raft links of a server cut off by Isolate.
func (c *Cluster) Heal(s *agent.Server) {
	c.t.Helper()
	m, i := c.memNet("Heal"), c.index(s)
	m.cut[i] = false
	m.link(i)
}
