// Package testcluster is the one in-process cluster builder for tests.
// New starts N servers, s1…sN, and waits for a ready leader. By default
// they run on raft's in-memory transport with static peers, in-memory
// stores that outlive a crash, HTTP on loopback and no gossip; with TCP()
// they run as a deployment does, on TCP Raft with bolt stores under
// t.TempDir() and gossip on loopback, bootstrapped through BootstrapExpect.
// Configure adjusts each server (TLS, ACL, elastic…). Leader, Followers and
// Client serve every test; Isolate, Heal and Restart the in-memory cluster;
// AddServer, StartWorker and StartWorkers the TCP one. Everything stops in
// t.Cleanup. It waits only through poll.Eventually.
package testcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/worker"
)

// Option chooses how New builds the cluster.
type Option func(*options)

type options struct {
	tcp       bool
	graceful  bool
	configure func(i int, cfg *agent.Config)
}

// TCP builds servers as a deployment runs them: TCP Raft on loopback, WAL
// stores and snapshots under t.TempDir() (fsync on), gossip on loopback,
// and Raft bootstrapped through gossip with BootstrapExpect = N.
func TCP() Option { return func(o *options) { o.tcp = true } }

// Graceful stops the cluster at cleanup the way an operator would (workers
// leave, then servers hand over leadership and leave) instead of killing
// it, and fails the test when that takes over 30 s: a shutdown must never
// hang.
func Graceful() Option { return func(o *options) { o.graceful = true } }

// Configure adjusts server i's configuration (from 0) before it starts.
func Configure(fn func(i int, cfg *agent.Config)) Option {
	return func(o *options) { o.configure = fn }
}

// Cluster is the servers and workers of one test. It is not safe for
// concurrent use: the test's goroutine drives it.
type Cluster struct {
	t       testing.TB
	opts    options
	dir     string          // TCP: the servers' data directories
	mem     *memNet         // nil with TCP
	servers []*agent.Server // index i is server s<i+1>, its latest start
	cfgs    []agent.Config  // as built, before the server's defaults: Restart reuses them
	workers []*worker.Worker
	expect  int // TCP: BootstrapExpect, the N of New
	devNext int // StartWorkers' next worker number
	stopped bool
}

// New starts n servers and waits for a ready leader. In memory they run at
// twice the LAN timeouts, and snapshot after 64 entries keeping 32, so a
// test reaches InstallSnapshot quickly; with TCP they keep the defaults.
func New(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for _, o := range opts {
		o(&c.opts)
	}
	if c.opts.tcp {
		c.dir = t.TempDir() // before the cleanup below, so removed after the servers stop
	}
	t.Cleanup(c.Stop)
	if c.opts.tcp {
		c.startTCP(n)
	} else {
		c.startMem(n)
	}
	c.Leader()
	return c
}

func serverID(i int) string { return fmt.Sprintf("s%d", i+1) }

// LoopbackGossip is gossip's default configuration on 127.0.0.1 with a
// free port.
func LoopbackGossip() gossip.Config {
	gc := gossip.DefaultConfig()
	gc.BindAddr, gc.BindPort = "127.0.0.1", 0
	return gc
}

func (c *Cluster) configure(i int, cfg *agent.Config) {
	if c.opts.configure != nil {
		c.opts.configure(i, cfg)
	}
}

// startTCP starts the servers one by one, each joining the earlier ones.
func (c *Cluster) startTCP(n int) {
	c.t.Helper()
	c.expect = n
	for i := range n {
		cfg := c.tcpConfig(i)
		c.configure(i, &cfg)
		c.startTCPServer(cfg)
	}
}

// tcpConfig is server i's configuration in a TCP cluster: loopback
// addresses, a data directory, and gossip joined through the servers
// started so far.
func (c *Cluster) tcpConfig(i int) agent.Config {
	return agent.Config{
		NodeID: serverID(i), DataDir: filepath.Join(c.dir, serverID(i)),
		HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", BootstrapExpect: c.expect, Join: c.gossipAddrs(),
		Gossip: LoopbackGossip(),
	}
}

func (c *Cluster) startTCPServer(cfg agent.Config) *agent.Server {
	c.t.Helper()
	c.cfgs = append(c.cfgs, cfg)
	s := c.start(cfg, agent.Deps{})
	c.servers = append(c.servers, s)
	return s
}

// gossipAddrs are the servers' gossip addresses.
func (c *Cluster) gossipAddrs() []string {
	var out []string
	for _, s := range c.servers {
		out = append(out, s.Gossip().LocalAddr())
	}
	return out
}

// AddServer starts one more server in a TCP cluster, built as New builds
// them (the Configure hook included) with BootstrapExpect still N, then
// adjusted by configure (which may rename it). It joins gossip through
// every server and is one of Servers from then on; whether Raft takes it
// is the cluster's business.
func (c *Cluster) AddServer(configure func(*agent.Config)) *agent.Server {
	c.t.Helper()
	if !c.opts.tcp {
		c.t.Fatal("testcluster: AddServer joins through gossip; build the cluster with TCP()")
	}
	i := len(c.servers)
	cfg := c.tcpConfig(i)
	c.configure(i, &cfg)
	if configure != nil {
		configure(&cfg)
	}
	return c.startTCPServer(cfg)
}

// start creates and starts one server; the cluster's Stop stops it.
func (c *Cluster) start(cfg agent.Config, deps agent.Deps) *agent.Server {
	c.t.Helper()
	s, err := agent.NewServer(cfg, deps)
	if err != nil {
		c.t.Fatalf("testcluster: server %s: %v", cfg.NodeID, err)
	}
	if err := s.Start(c.t.Context()); err != nil {
		_ = s.Kill()
		c.t.Fatalf("testcluster: start server %s: %v", cfg.NodeID, err)
	}
	return s
}

// Servers are the servers, s1 first; a restarted server takes its own
// place. The slice is the cluster's: do not change it.
func (c *Cluster) Servers() []*agent.Server { return c.servers }

// Leader waits for a ready leader among the servers not in skip: 20 s on
// the in-memory transport, 30 s with TCP and gossip.
func (c *Cluster) Leader(skip ...*agent.Server) *agent.Server {
	c.t.Helper()
	within := 20 * time.Second
	if c.opts.tcp {
		within = 30 * time.Second
	}
	var leader *agent.Server
	poll.Eventually(c.t, within, "a ready leader", func() error {
		var states []string
		for _, s := range c.servers {
			if slices.Contains(skip, s) {
				continue
			}
			if s.Store().IsLeader() && s.Store().Ready() {
				leader = s
				return nil
			}
			states = append(states, s.NodeID()+" "+s.Raft().State().String())
		}
		return fmt.Errorf("no ready leader among %s", strings.Join(states, ", "))
	})
	return leader
}

// Followers are the servers other than leader.
func (c *Cluster) Followers(leader *agent.Server) []*agent.Server {
	var out []*agent.Server
	for _, s := range c.servers {
		if s != leader {
			out = append(out, s)
		}
	}
	return out
}

// Client is an API client of server s (https when the cluster has TLS).
func (c *Cluster) Client(s *agent.Server, opts ...api.Option) *api.Client {
	c.t.Helper()
	cl, err := api.New(s.HTTPURL(), opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

func (c *Cluster) index(s *agent.Server) int {
	c.t.Helper()
	i := slices.Index(c.servers, s)
	if i < 0 {
		c.t.Fatalf("testcluster: server %s is not in the cluster", s.NodeID())
	}
	return i
}

// Restart starts server s again from its Raft state (its in-memory stores,
// or its data directory), killing it first if it still runs. configure,
// when set, adjusts the configuration New built for it. On the in-memory
// transport it keeps its Raft and HTTP addresses and its links (a server
// cut off by Isolate stays cut off); with TCP it gets new ports.
func (c *Cluster) Restart(s *agent.Server, configure func(*agent.Config)) *agent.Server {
	c.t.Helper()
	i := c.index(s)
	_ = s.Kill() // nothing to do when it stopped already
	cfg := c.cfgs[i]
	if configure != nil {
		configure(&cfg)
	}
	deps := agent.Deps{}
	if c.mem != nil {
		deps = c.mem.restartDeps(c.t, i)
	}
	c.servers[i], c.cfgs[i] = c.start(cfg, deps), cfg
	return c.servers[i]
}

// Stop stops the workers, then the servers: killed, or shut down with
// Graceful. The cleanup calls it; a test may call it earlier.
func (c *Cluster) Stop() {
	if !c.opts.graceful {
		if c.markStopped() {
			c.kill()
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		c.t.Errorf("testcluster: shutdown did not finish in 30s: %v", err)
	}
}

// Shutdown stops the cluster gracefully now: workers leave, then servers
// hand over leadership and leave, last started first. It returns what went
// wrong; Stop then has nothing left to do.
func (c *Cluster) Shutdown(ctx context.Context) error {
	if !c.markStopped() {
		return nil
	}
	var errs []error
	for _, w := range c.workers {
		errs = append(errs, w.Shutdown(ctx))
	}
	for i := len(c.servers) - 1; i >= 0; i-- {
		errs = append(errs, c.servers[i].Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func (c *Cluster) markStopped() bool {
	if c.stopped {
		return false
	}
	c.stopped = true
	return true
}

func (c *Cluster) kill() {
	for _, w := range c.workers {
		_ = w.Kill()
	}
	for _, s := range c.servers {
		_ = s.Kill()
	}
}
