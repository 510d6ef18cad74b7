package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/elastic"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/httpapi"
	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/leader"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/scheduler"
	"github.com/amserver/amserver/ui"
)

// Server is one amserver server: a Raft voter, a gossip member and an HTTP
// API endpoint; while leader it also runs the leader duties.
type Server struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger

	fsm     *fsm.FSM
	store   *raftstore.Store
	gossip  *gossip.Gossip // nil with Deps.NoGossip
	api     *httpapi.Server
	httpLn  net.Listener
	tls     *certs.TLS // nil: no TLS
	engine  *scheduler.Engine
	leader  *leader.Leader
	wake    chan struct{} // gossip changed: the leader reconciles now
	metrics *metrics
	// gossipPeers is the list last saved to gossipPeersFile.
	peersMu     sync.Mutex
	gossipPeers []string

	mu           sync.Mutex
	bootstrapped bool
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	stopped      bool
}

// httpShutdownGrace is what requests in flight get to finish when the
// server stops: a SIGTERM's whole budget is five seconds.
const httpShutdownGrace = 2 * time.Second

// NewServer opens the stores and creates Raft, gossip and the HTTP API, but
// listens for HTTP only on Start.
func NewServer(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if deps.Engine == nil {
		deps.Engine = scheduler.NewEngine(scheduler.Options{})
	}
	s := &Server{
		cfg: cfg, deps: deps, logger: cfg.Logger.With("server", cfg.NodeID),
		fsm:    fsm.New(fsm.Config{Logger: cfg.Logger, Exprs: deps.Engine.ExprChecker(), Eval: deps.Engine.ExprChecker()}),
		engine: deps.Engine, wake: make(chan struct{}, 1),
	}
	m, err := newMetrics(s)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s.metrics = m
	if s.tls, err = cfg.loadTLS(); err != nil {
		return nil, err
	}
	if err := s.listenHTTP(); err != nil {
		return nil, err
	}
	if err := s.open(); err != nil {
		_ = s.httpLn.Close()
		return nil, err
	}
	s.leader = leader.New(s.leaderConfig())
	s.api = httpapi.New(httpapi.Config{
		Backend: &backend{Store: s.store, srv: s}, Exprs: deps.Engine.ExprChecker(), Logger: cfg.Logger,
		Metrics: m.handler(), Registerer: m.reg, KeepAlive: cfg.EventKeepAlive,
		ACLEnabled: cfg.ACL.Enabled, UI: ui.Handler(), ForwardTLS: s.forwardTLS(), ForwardClient: deps.HTTPClient,
		ShutdownGrace: httpShutdownGrace,
		MaxExpensive:  cfg.MaxExpensive, MaxExpensivePerCaller: cfg.MaxExpensivePerCaller,
		WriteLatencyFactor: cfg.WriteLatencyFactor,
	})
	return s, nil
}

// open starts Raft over the FSM, then gossip.
func (s *Server) open() error {
	store, err := raftstore.Open(raftstore.Config{
		NodeID: s.cfg.NodeID, DataDir: s.cfg.DataDir, Recover: s.cfg.Recover, LogStore: s.cfg.RaftLogStore, RaftAddr: s.cfg.RaftAddr, RaftAdvertise: s.cfg.RaftAdvertise,
		TimeoutScale: s.cfg.TimeoutScale, SnapshotThreshold: s.cfg.SnapshotThreshold, TrailingLogs: s.cfg.TrailingLogs,
		TLS: s.tls, Transport: s.deps.Transport, MemStores: s.deps.MemStores,
		HTTPAddrOf: s.httpAddrOf, OnCommit: s.metrics.committed, Logger: s.cfg.Logger,
	}, s.fsm)
	if err != nil {
		return err
	}
	s.store = store
	s.bootstrapped = store.HadState()
	if s.deps.NoGossip {
		return nil
	}
	if err := s.setupGossip(); err != nil {
		_ = store.Shutdown()
		store.Close()
		return err
	}
	return nil
}

// leaderConfig is what the leader duties get of this server.
func (s *Server) leaderConfig() leader.Config {
	lc := leader.Config{
		NodeID: s.cfg.NodeID, Store: s.store, Clock: s.cfg.Clock, Wake: s.wake, Engine: s.engine,
		Logger: s.logger, DeleteTimeout: s.cfg.DeleteTimeout, DeadServerCleanup: s.cfg.DeadServerCleanup,
		UnseenNodeDown: s.cfg.UnseenNodeDown, RolloutSettle: s.cfg.RolloutSettle, QuorumSize: s.cfg.QuorumSize, ConfigTokens: s.cfg.ACL.fsmTokens(),
		ServersApply: s.clusterApplies,
		Metrics: leader.Metrics{
			PlacementBatch: s.metrics.placementBatch, PlacementLatency: s.metrics.placementLatency,
			Failovers: s.metrics.failovers,
		},
		Elastic: leader.ElasticConfig{
			MaxProvisionedNodes: s.cfg.Elastic.MaxProvisionedNodes, ProvisionerProblem: s.cfg.Elastic.policy().Problem,
			Interval: s.cfg.Elastic.Interval, DeleteGrace: s.cfg.Elastic.DeleteGrace,
			Addresses: s.serverAddresses,
			Provisioning: func(ctx context.Context) leader.Provisioning {
				return elastic.NewCalls(ctx, s.logger.With("duty", "elastic"), s.cfg.Elastic.calls())
			},
		},
	}
	if s.gossip != nil { // a nil *Gossip in the interface would not read as absent
		lc.Membership, lc.Voters = s.gossip, s.store
	}
	return lc
}

// listenHTTP opens the API listener early so that an advertised address
// with port 0 (dev, tests) is known before gossip publishes it.
func (s *Server) listenHTTP() error {
	ln := s.deps.HTTPListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.HTTPAddr); err != nil {
			return fmt.Errorf("http listen on %s: %w", s.cfg.HTTPAddr, err)
		}
	}
	if s.cfg.HTTPAdvertise == "" || s.cfg.HTTPAdvertise == s.cfg.HTTPAddr {
		s.cfg.HTTPAdvertise = ln.Addr().String()
	}
	s.httpLn, s.cfg.HTTPAdvertise = s.secureHTTP(ln, s.cfg.HTTPAdvertise)
	return nil
}

func (s *Server) setupGossip() error {
	gc := s.cfg.Gossip
	gc.NodeName = s.cfg.NodeID
	gc.Meta = s.serverMeta(s.bootstrapped) // Raft state on disk: a member already
	if gc.Logger == nil {
		gc.Logger = s.cfg.Logger
	}
	g, err := newGossip(gc, s.rememberedKeyring())
	if err != nil {
		return fmt.Errorf("start gossip: %w", err)
	}
	s.gossip = g
	return nil
}

// httpAddrOf finds a server's HTTP address in its gossip metadata.
func (s *Server) httpAddrOf(id string) string {
	if id == s.cfg.NodeID {
		return s.cfg.HTTPAdvertise
	}
	if s.gossip != nil {
		if m, ok := s.gossip.Member(id); ok {
			return m.Meta.HTTPAddr
		}
	}
	return s.withScheme(s.deps.PeerHTTP[id])
}

// Start serves HTTP, joins gossip and runs the background loops until
// Shutdown (or ctx ends).
func (s *Server) Start(ctx context.Context) error {
	if s.cfg.Bootstrap {
		s.bootstrapStatic()
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.goRun(func() {
		s.store.RunLeadership(ctx, raftstore.Term{
			Prepare: s.leader.Prepare,
			Run:     func(ctx context.Context) { leader.Run(ctx, s.leader.Duties()) },
		})
	})
	s.goRun(func() {
		if err := s.api.Serve(ctx, s.httpLn); err != nil {
			s.logger.Error("http server stopped", "err", err)
		}
	})
	if s.gossip != nil {
		s.goRun(func() { s.watchGossip(ctx) })
		s.goRun(func() { s.watchKeyring(ctx) })
		if !s.isBootstrapped() {
			s.goRun(func() { s.advertiseMembership(ctx) })
		}
		if join := s.joinList(); len(join) > 0 {
			s.goRun(func() { s.join(ctx, join) })
		}
	}
	return nil
}

// joinList is --join and, with a data directory, the servers this one
// last saw alive.
func (s *Server) joinList() []string {
	if s.cfg.DataDir == "" {
		return s.cfg.Join
	}
	remembered, err := loadGossipPeers(s.cfg.DataDir)
	if err != nil {
		s.logger.Warn("not joining the servers last seen: their addresses cannot be read", "err", err)
	}
	return joinAddrs(s.cfg.Join, remembered)
}

func (s *Server) goRun(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

func (s *Server) join(ctx context.Context, addrs []string) {
	if _, err := s.gossip.Join(ctx, addrs); err != nil && ctx.Err() == nil {
		s.logger.Error("gossip join failed", "addrs", addrs, "err", err)
	}
}

// watchGossip consumes membership events on every server: it bootstraps
// Raft when enough servers appear and wakes the leader's reconciler. Until
// bootstrapped it also retries every second, since a peer that did not
// answer the bootstrap check may answer later without any gossip event.
func (s *Server) watchGossip(ctx context.Context) {
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		s.maybeBootstrap(ctx)
		s.rememberGossipPeers()
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		case _, ok := <-s.gossip.Events():
			if !ok {
				return
			}
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// NodeID is the server's id in Raft and gossip.
func (s *Server) NodeID() string { return s.cfg.NodeID }

// HTTPAddr is the address the HTTP API listens on (useful with port 0).
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

// Raft exposes the Raft instance for operators' tooling and tests.
func (s *Server) Raft() *raft.Raft { return s.store.Raft() }

// FSM exposes the state machine for tests and the dev cluster.
func (s *Server) FSM() *fsm.FSM { return s.fsm }

// Store exposes the Raft store.
func (s *Server) Store() *raftstore.Store { return s.store }

// Gossip exposes the gossip member (nil without gossip).
func (s *Server) Gossip() *gossip.Gossip { return s.gossip }

// transferTarget is the voter a leader that stops hands leadership to: ""
// (Raft picks the most up-to-date follower) while every other voter is
// alive in gossip, else the first alive one. Raft's pick ignores liveness:
// with a follower dead it tried the dead one, the transfer failed, and
// the cluster waited an election timeout for a leader.
func (s *Server) transferTarget() string {
	voters, err := s.store.Voters()
	if err != nil || s.gossip == nil {
		return ""
	}
	var alive []string
	for id := range voters {
		if id == s.cfg.NodeID {
			continue
		}
		if m, ok := s.gossip.Member(id); ok && m.Status == gossip.StatusAlive {
			alive = append(alive, id)
		}
	}
	if len(alive) == 0 || len(alive) == len(voters)-1 {
		return ""
	}
	slices.Sort(alive)
	return alive[0]
}

// Shutdown leaves gracefully: the HTTP API's answers stop keeping
// connections alive (clients move to fresh ones while it still serves), a
// leader hands leadership to another server, gossip announces the leave,
// then Raft stops and HTTP drains the requests in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.markStopped() {
		return nil
	}
	s.api.Drain()
	if s.store.IsLeader() && s.store.VoterCount() > 1 {
		if err := s.store.TransferLeadership(ctx, s.transferTarget()); err != nil {
			s.logger.Warn("leadership transfer before shutdown failed", "err", err)
		}
	}
	if s.gossip != nil {
		s.rememberGossipPeers() // the freshest list, for the restart
		// The leave's broadcast gets at most a third of what is left, so
		// requests in flight and Raft still have their share.
		within := 5 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			within = max(time.Until(dl)/3, 100*time.Millisecond)
		}
		if err := s.gossip.Leave(within); err != nil {
			s.logger.Warn("gossip leave failed", "err", err)
		}
	}
	return s.stop(ctx)
}

// Kill stops abruptly, as a crash would (tests): no transfer, no leave.
func (s *Server) Kill() error {
	if !s.markStopped() {
		return nil
	}
	return s.stop(context.Background())
}

func (s *Server) markStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.stopped = true
	return true
}

func (s *Server) stop(ctx context.Context) error {
	s.store.Stop()
	if s.cancel != nil {
		s.cancel()
	}
	var errs []error
	if s.gossip != nil {
		errs = append(errs, s.gossip.Shutdown())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.store.Shutdown() }()
	select {
	case err := <-stopped:
		errs = append(errs, err)
	case <-ctx.Done():
		// Raft is still stopping (a snapshot being written, a peer that
		// does not answer) and the budget is spent: the process exits
		// anyway, which to Raft is a crash its synced log survives.
		// Closing the stores under it would only fail its goroutines.
		return errors.Join(append(errs, fmt.Errorf("raft did not stop within the shutdown budget, left running: %w", ctx.Err()))...)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("waiting for background loops: %w", ctx.Err()))
	}
	s.store.Close()
	return errors.Join(errs...)
}
