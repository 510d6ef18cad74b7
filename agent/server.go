package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/httpapi"
	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/scheduler"
	"github.com/amserver/amserver/ui"
)

// Server is one amserver server: a Raft voter, a gossip member and an HTTP
// API endpoint; while leader it also runs the leader duties.
type Server struct {
	cfg    Config
	logger *slog.Logger

	fsm       *fsm.FSM
	raft      *raft.Raft
	store     *Store
	stores    *raftStores
	transport raft.Transport
	gossip    *gossip.Gossip
	api       *httpapi.Server
	httpLn    net.Listener
	tls       *certs.TLS      // nil: no TLS
	raftTLS   *tlsStreamLayer // nil: plain TCP or a test transport

	probeMu     sync.Mutex
	probeFailed map[string]time.Time // raft address → last failed certificate probe

	notifyCh    chan bool
	reconcileCh chan struct{}
	duties      []Duty
	engine      *scheduler.Engine
	metrics     *metrics

	mu           sync.Mutex
	bootstrapped bool
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	stopped      bool
}

// Deps are the server's pluggable collaborators.
type Deps struct {
	// Engine is the placement engine; nil makes a default one. Every server
	// must validate expressions the same way, so the FSM always uses it.
	Engine *scheduler.Engine
	// Duties replace the default leader duties (tests); nil means all of them.
	Duties []Duty
}

// NewServer opens the stores and creates Raft, gossip and the HTTP API, but
// listens for HTTP only on Start.
func NewServer(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if deps.Engine == nil {
		deps.Engine = scheduler.NewEngine(scheduler.Options{})
	}
	exprs := deps.Engine.ExprChecker()
	s := &Server{
		cfg: cfg, logger: cfg.Logger.With("server", cfg.NodeID),
		fsm:         fsm.New(fsm.Config{Logger: cfg.Logger, Exprs: exprs}),
		notifyCh:    make(chan bool, 32),
		reconcileCh: make(chan struct{}, 1),
		engine:      deps.Engine,
	}
	s.duties = deps.Duties
	if s.duties == nil {
		s.duties = s.defaultDuties()
	}
	m, err := newMetrics(s)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s.metrics = m
	tc, err := cfg.loadTLS()
	if err != nil {
		return nil, err
	}
	s.tls = tc
	if err := s.listenHTTP(); err != nil {
		return nil, err
	}
	if err := s.setupRaft(); err != nil {
		_ = s.httpLn.Close()
		return nil, err
	}
	if !cfg.NoGossip {
		if err := s.setupGossip(); err != nil {
			s.closeRaft()
			_ = s.httpLn.Close()
			return nil, err
		}
	}
	s.store.onCommit = m.committed
	s.api = httpapi.New(httpapi.Config{
		Backend: &backend{Store: s.store, srv: s}, Exprs: exprs, Logger: cfg.Logger,
		Metrics: m.handler(), Registerer: m.reg, KeepAlive: cfg.EventKeepAlive,
		ACLEnabled: cfg.ACL.Enabled, UI: ui.Handler(), ForwardTLS: s.forwardTLS(), ForwardClient: cfg.HTTPClient,
	})
	return s, nil
}

// listenHTTP opens the API listener early so that an advertised address
// with port 0 (dev, tests) is known before gossip publishes it.
func (s *Server) listenHTTP() error {
	ln := s.cfg.HTTPListener
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

func (s *Server) setupRaft() error {
	stores, err := openStores(&s.cfg)
	if err != nil {
		return err
	}
	s.stores = stores
	transport, raftTLS, err := newTransport(&s.cfg, s.tls)
	if err != nil {
		_ = stores.close()
		return err
	}
	s.transport, s.raftTLS = transport, raftTLS
	hasState, err := raft.HasExistingState(stores.logs, stores.stable, stores.snaps)
	if err != nil {
		_ = stores.close()
		return fmt.Errorf("inspect raft state: %w", err)
	}
	s.bootstrapped = hasState
	r, err := raft.NewRaft(raftConfig(&s.cfg, s.notifyCh), s.fsm, stores.logs, stores.stable, stores.snaps, transport)
	if err != nil {
		_ = stores.close()
		return fmt.Errorf("start raft: %w", err)
	}
	s.raft = r
	s.store = newStore(r, s.fsm, s.cfg.Clock, s.httpAddrOf)
	return nil
}

func (s *Server) setupGossip() error {
	gc := s.cfg.Gossip
	gc.NodeName = s.cfg.NodeID
	gc.Meta = s.serverMeta(s.bootstrapped) // Raft state on disk: a member already
	if gc.Logger == nil {
		gc.Logger = s.cfg.Logger
	}
	g, err := gossip.New(gc)
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
	return s.withScheme(s.cfg.PeerHTTP[id])
}

// Start serves HTTP, joins gossip and runs the background loops until
// Shutdown (or ctx ends).
func (s *Server) Start(ctx context.Context) error {
	ln := s.httpLn
	if s.cfg.Bootstrap {
		s.bootstrapSingle()
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.goRun(func() { s.monitorLeadership(ctx) })
	s.goRun(func() {
		if err := s.api.Serve(ctx, ln); err != nil {
			s.logger.Error("http server stopped", "err", err)
		}
	})
	if s.gossip != nil {
		s.goRun(func() { s.watchGossip(ctx) })
		s.goRun(func() { s.watchKeyring(ctx) })
		if !s.isBootstrapped() {
			s.goRun(func() { s.advertiseMembership(ctx) })
		}
		if len(s.cfg.Join) > 0 {
			s.goRun(func() { s.join(ctx) })
		}
	}
	return nil
}

func (s *Server) goRun(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

func (s *Server) join(ctx context.Context) {
	if _, err := s.gossip.Join(ctx, s.cfg.Join); err != nil && ctx.Err() == nil {
		s.logger.Error("gossip join failed", "addrs", s.cfg.Join, "err", err)
	}
}

// watchGossip consumes membership events on every server: it bootstraps
// Raft when enough servers appear and wakes the leader's reconciler.
func (s *Server) watchGossip(ctx context.Context) {
	s.maybeBootstrap()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-s.gossip.Events():
			if !ok {
				return
			}
			s.maybeBootstrap()
			select {
			case s.reconcileCh <- struct{}{}:
			default:
			}
		}
	}
}

// HTTPAddr is the address the HTTP API listens on (useful with port 0).
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

// Raft exposes the Raft instance for operators' tooling and tests.
func (s *Server) Raft() *raft.Raft { return s.raft }

// FSM exposes the state machine for tests and the dev cluster.
func (s *Server) FSM() *fsm.FSM { return s.fsm }

// Store exposes the Raft store wrapper.
func (s *Server) Store() *Store { return s.store }

// Gossip exposes the gossip member (nil without gossip).
func (s *Server) Gossip() *gossip.Gossip { return s.gossip }

// Shutdown leaves gracefully: a leader first hands leadership to another
// server, then gossip announces the leave, then Raft and HTTP stop.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.markStopped() {
		return nil
	}
	if s.store.IsLeader() && s.voters() > 1 {
		if err := s.raft.LeadershipTransfer().Error(); err != nil {
			s.logger.Warn("leadership transfer before shutdown failed", "err", err)
		}
	}
	if s.gossip != nil {
		if err := s.gossip.Leave(5 * time.Second); err != nil {
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
	s.store.stop()
	if s.cancel != nil {
		s.cancel()
	}
	var errs []error
	if s.gossip != nil {
		errs = append(errs, s.gossip.Shutdown())
	}
	errs = append(errs, s.raft.Shutdown().Error())
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("waiting for background loops: %w", ctx.Err()))
	}
	s.closeRaft()
	return errors.Join(errs...)
}

func (s *Server) closeRaft() {
	if c, ok := s.transport.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	if s.stores != nil {
		_ = s.stores.close()
	}
}

func (s *Server) voters() int {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}
