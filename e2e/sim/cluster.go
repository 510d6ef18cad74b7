package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
	// Aliased: this package's own worker type names a simulated node.
	amworker "github.com/amserver/amserver/worker"
)

// Pool is the pool the simulated workers join and the workload uses.
const Pool = "e2e"

// server is one simulated server: its stores outlive crashes, its addresses
// outlive restarts.
type server struct {
	id         string
	gossipAddr string
	httpAddr   string // on the memNet, kept across restarts
	stores     *raftstore.MemStores
	clock      *workClock
	proxy      *proxy
	srv        *agent.Server // nil while crashed
	tr         *raft.InmemTransport
	paused     bool
}

// worker is one simulated worker node.
type worker struct {
	id, az, cloud string
	gossipAddr    string
	w             *amworker.Worker // nil while killed
}

// cluster is the simulated deployment: servers on raft's in-memory
// transport, everyone on an in-memory gossip network, real HTTP on loopback.
type cluster struct {
	logger  *slog.Logger
	scale   float64
	acl     bool // see aclEvery
	gnet    *gossipNet
	mn      *memNet
	hc      *http.Client // every HTTP call of the seed goes through mn
	servers []*server
	workers []*worker

	mu   sync.Mutex
	cuts map[[2]int]bool // server index → server index, one way
}

func newCluster(logger *slog.Logger, seed uint64, servers, workers int, scale float64) (*cluster, error) {
	mn := newMemNet()
	c := &cluster{logger: logger, scale: scale, gnet: newGossipNet(), mn: mn, hc: mn.client(), cuts: map[[2]int]bool{}}
	for i := range servers {
		addr := fmt.Sprintf("10.77.0.%d:7070", i+1)
		p, err := newProxy(mn, fmt.Sprintf("10.77.2.%d:7070", i+1), addr)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, &server{
			id: fmt.Sprintf("s%d", i+1), gossipAddr: fmt.Sprintf("10.77.0.%d:7072", i+1),
			httpAddr: addr, stores: raftstore.NewMemStores(), proxy: p, clock: newWorkClock(seed + uint64(i)),
		})
	}
	domains := [][2]string{{"az-1", "cloud-a"}, {"az-2", "cloud-a"}, {"az-3", "cloud-b"}}
	for i := range workers {
		d := domains[i%len(domains)]
		c.workers = append(c.workers, &worker{
			id: fmt.Sprintf("w%d", i+1), az: d[0], cloud: d[1], gossipAddr: fmt.Sprintf("10.77.1.%d:7072", i+1),
		})
	}
	return c, nil
}

// gossipConfig is fast failure detection for a simulation: a dead member
// is declared within a few hundred milliseconds.
func (c *cluster) gossipConfig(addr string) gossip.Config {
	gc := gossip.DefaultConfig()
	gc.Transport = c.gnet.attach(addr)
	gc.ProbeInterval = 100 * time.Millisecond
	gc.ProbeTimeout = 40 * time.Millisecond
	gc.GossipInterval = 30 * time.Millisecond
	gc.SuspicionMult = 2
	gc.ReconnectInterval = 200 * time.Millisecond
	gc.DeadNodeReclaimTime = 100 * time.Millisecond
	gc.Logger = c.logger
	return gc
}

func (c *cluster) serverGossipAddrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.gossipAddr
	}
	return out
}

// ClientAddrs are the proxies clients talk to, one per server.
func (c *cluster) clientAddrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.proxy.Addr()
	}
	return out
}

func (c *cluster) startServer(ctx context.Context, s *server) error {
	peers, httpAddrs := map[string]string{}, map[string]string{}
	for _, o := range c.servers {
		peers[o.id], httpAddrs[o.id] = o.id, o.httpAddr
	}
	ln, err := c.mn.listen(s.httpAddr)
	if err != nil {
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	// The timeout bounds every RPC, InstallSnapshot included: at 200 ms a
	// restarted server on a loaded machine never finished catching up. Cut
	// links fail at once, so a long timeout costs nothing elsewhere.
	_, tr := raft.NewInmemTransportWithTimeout(raft.ServerAddress(s.id), 2*time.Second)
	deps := agent.Deps{
		HTTPListener: ln, HTTPClient: c.hc, Transport: tr, MemStores: s.stores, Peers: peers, PeerHTTP: httpAddrs,
	}
	cfg := agent.Config{
		NodeID: s.id, Bootstrap: true, TimeoutScale: c.scale,
		SnapshotThreshold: 64, TrailingLogs: 32, DeleteTimeout: 2 * time.Second,
		DeadServerCleanup: time.Hour, Gossip: c.gossipConfig(s.gossipAddr),
		Join: c.serverGossipAddrs(), ACL: c.aclConfig(), Logger: c.logger, Clock: s.clock,
	}
	srv, err := agent.NewServer(cfg, deps)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	if err := srv.Start(ctx); err != nil {
		_ = srv.Kill()
		return fmt.Errorf("start server %s: %w", s.id, err)
	}
	c.mu.Lock()
	s.srv, s.tr = srv, tr
	c.mu.Unlock()
	c.applyLinks()
	return nil
}

func (c *cluster) crashServer(s *server) {
	c.mu.Lock()
	srv := s.srv
	s.srv, s.tr = nil, nil
	c.mu.Unlock()
	c.mn.crash(s.httpAddr) // a dead process's sockets reset at once
	if srv != nil {
		_ = srv.Kill()
	}
	c.applyLinks()
}

func (c *cluster) startWorker(ctx context.Context, w *worker) error {
	httpAddrs := make([]string, len(c.servers))
	for i, s := range c.servers {
		httpAddrs[i] = s.httpAddr
	}
	wc := amworker.Config{
		NodeID: w.id, AZ: w.az, Cloud: w.cloud,
		Inventory: c.nodeSpec(w, workerCapacity),
		Servers:   httpAddrs, Join: c.serverGossipAddrs(), Gossip: c.gossipConfig(w.gossipAddr),
		Logger: c.logger, PollWait: 2 * time.Second, HTTPClient: c.hc,
	}
	if c.acl {
		wc.Token = workerSecret(w.id)
	}
	wk, err := amworker.New(wc)
	if err != nil {
		return fmt.Errorf("worker %s: %w", w.id, err)
	}
	if err := wk.Start(ctx); err != nil {
		_ = wk.Kill()
		return fmt.Errorf("start worker %s: %w", w.id, err)
	}
	c.mu.Lock()
	w.w = wk
	c.mu.Unlock()
	return nil
}

func (c *cluster) killWorker(w *worker) {
	c.mu.Lock()
	wk := w.w
	w.w = nil
	c.mu.Unlock()
	if wk != nil {
		_ = wk.Kill()
	}
}

// setCuts replaces the cut server links and applies them to Raft and gossip.
func (c *cluster) setCuts(cuts map[[2]int]bool) {
	c.mu.Lock()
	c.cuts = cuts
	c.mu.Unlock()
	c.applyLinks()
}

func (c *cluster) setPaused(s *server, paused bool) {
	c.mu.Lock()
	s.paused = paused
	c.mu.Unlock()
	if paused {
		s.proxy.pause()
	} else {
		s.proxy.unpause()
	}
	c.applyLinks()
}

// applyLinks connects every pair of running servers whose link is neither
// cut nor touching a paused server, and disconnects the rest; a paused
// server is cut off from gossip entirely.
func (c *cluster) applyLinks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gossipCuts [][2]string
	for i, a := range c.servers {
		for j, b := range c.servers {
			if i == j {
				continue
			}
			open := !c.cuts[[2]int{i, j}] && !a.paused && !b.paused
			if !open {
				gossipCuts = append(gossipCuts, [2]string{a.gossipAddr, b.gossipAddr})
			}
			if a.tr == nil {
				continue
			}
			if open && b.srv != nil && b.tr != nil {
				a.tr.Connect(raft.ServerAddress(b.id), b.tr)
			} else {
				a.tr.Disconnect(raft.ServerAddress(b.id))
			}
		}
		if a.paused {
			for _, w := range c.workers {
				gossipCuts = append(gossipCuts, [2]string{a.gossipAddr, w.gossipAddr}, [2]string{w.gossipAddr, a.gossipAddr})
			}
		}
	}
	c.gnet.setCuts(gossipCuts)
}

// leader returns the running server that believes it leads, if any.
func (c *cluster) leader() *server {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		if s.srv != nil && !s.paused && s.srv.Store().IsLeader() {
			return s
		}
	}
	return nil
}

// waitLeader waits until some server leads and answers a linearizable read.
func (c *cluster) waitLeader(ctx context.Context) error {
	var lastErr error
	for {
		if l := c.leader(); l != nil {
			cl, err := c.client(l.httpAddr)
			if err != nil {
				return err
			}
			if _, _, lastErr = cl.Pools(ctx, nil); lastErr == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("no leader: %w (servers: %s)", ctx.Err(), c.describe())
			if lastErr != nil {
				err = fmt.Errorf("%w; last read: %w", err, lastErr)
			}
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// describe is each server's Raft view, for a failure message.
func (c *cluster) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, s := range c.servers {
		if s.srv == nil {
			parts = append(parts, s.id+" down")
			continue
		}
		r := s.srv.Raft()
		addr, id := r.LeaderWithID()
		parts = append(parts, fmt.Sprintf("%s %s term %s leader %s(%s) applied %d http %s",
			s.id, r.State(), r.Stats()["term"], id, addr, r.AppliedIndex(), s.httpAddr))
	}
	return strings.Join(parts, "; ")
}

// healAll lifts every fault: links, pauses, crashed servers, killed workers.
func (c *cluster) healAll(ctx context.Context) error {
	c.setCuts(map[[2]int]bool{})
	var errs []error
	for _, s := range c.servers {
		if s.paused {
			c.setPaused(s, false)
		}
		if s.srv == nil {
			errs = append(errs, c.startServer(ctx, s))
		}
	}
	for _, w := range c.workers {
		if w.w == nil {
			errs = append(errs, c.startWorker(ctx, w))
		}
	}
	return errors.Join(errs...)
}

// stop kills everything, bounded so that a wedged member fails one seed
// instead of hanging the run.
func (c *cluster) stop() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, w := range c.workers {
			c.killWorker(w)
		}
		for _, s := range c.servers {
			c.crashServer(s)
			s.proxy.close()
		}
		c.hc.CloseIdleConnections()
		c.mn.closeAll()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.logger.Error("simulated cluster did not stop within 30s")
	}
}
