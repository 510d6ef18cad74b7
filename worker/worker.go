// Package worker is amserver's worker runtime, the process on every node
// that runs work. It owns registering the node's inventory with the
// servers, following the node's assignments with blocking queries, running
// them through drivers behind one Driver interface (none, exec, wasm,
// docker, compose; the Dispatcher picks by runtime), reporting
// their status back, and following the replicated gossip keyring. It talks
// to servers only through package api and gossip, never through server
// internals, so it runs on nodes that hold no Raft state.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/certs"
)

// Config configures a worker: its identity, failure domain, inventory and
// how it finds the servers.
type Config struct {
	NodeID    string
	Inventory api.NodeSpec // pool, labels, taints, capacity, cores, GPUs, capabilities
	AZ, Cloud string
	Driver    Driver
	// Servers are HTTP addresses to try first; gossip adds the rest.
	Servers []string
	Token   string
	Join    []string
	Gossip  gossip.Config
	// TLS: the CA that servers' certificates must chain to (their API is
	// then reached over HTTPS) and, when the API requires one, this
	// worker's certificate.
	TLS    certs.Files
	Logger *slog.Logger
	// PollWait is the blocking-query wait for assignments.
	PollWait time.Duration
	// HTTPClient, when set, carries every call to the servers instead of a
	// client built from TLS (the in-process simulation's in-memory network).
	HTTPClient *http.Client
	// HTTPAddr is where the worker serves its assignments' logs (GET
	// /v1/assignments/{id}/logs); empty serves nothing. HTTPAdvertise is
	// the host:port servers reach it at (default: the listener's, with the
	// gossip advertise address for an unspecified host); gossip publishes it.
	HTTPAddr      string
	HTTPAdvertise string
	// RetainFinished is how long a finished batch job's output
	// (stdout.log, stderr.log) stays readable through the log endpoint
	// after its assignment is stopped, with a driver that keeps it (the
	// Dispatcher): 0 is DefaultRetainFinished (1 h), a negative period
	// keeps none. At most 256 jobs' output is kept, the oldest dropped first.
	RetainFinished time.Duration
}

// Worker joins gossip with its failure-domain labels, registers its
// inventory, and runs its assignments through a driver.
type Worker struct {
	cfg    Config
	logger *slog.Logger
	gossip *gossip.Gossip
	meta   gossip.Meta  // what it publishes, without the refusal tag
	https  *http.Client // nil: plain HTTP; shared so connections are reused
	tls    *certs.TLS   // what https presents and trusts; nil without TLS
	// The log endpoint's listener and published URL; nil and "" without
	// Config.HTTPAddr. checkToken decides who may read logs (checkReader).
	httpLn     net.Listener
	httpURL    string
	checkToken func(ctx context.Context, token string) error
	// retain keeps finished batch jobs' output (the driver's); nil when
	// the driver keeps none.
	retain *retainStore

	mu      sync.Mutex
	server  int // index into servers() of the server in use
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
	// restarting holds the assignments stopped to run again for a new
	// generation, until their next Ensure: a log follower waits for the
	// next run instead of taking the stop for the task's end.
	restarting map[string]bool

	// gens is the generation each assignment had when the worker last
	// reconciled it; only the run loop touches it.
	gens map[string]uint64
}

// New creates the worker's gossip member; Start joins and runs it.
func New(cfg Config) (*Worker, error) {
	if cfg.NodeID == "" || cfg.Inventory.Pool == "" {
		return nil, errors.New("worker: node id and pool are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Driver == nil {
		cfg.Driver = NewNoneDriver()
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = 30 * time.Second
	}
	cfg.Inventory.ID = cfg.NodeID
	if len(cfg.Inventory.Runtimes) == 0 {
		cfg.Inventory.Runtimes = driverRuntimes(cfg.Driver)
	}
	hc, tc, err := httpsClient(cfg.TLS)
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, logger: cfg.Logger.With("worker", cfg.NodeID), https: hc, tls: tc}
	w.checkToken = w.checkReader
	if cfg.HTTPAddr != "" {
		if w.httpURL, err = w.listenLogs(); err != nil {
			return nil, err
		}
	}
	gc := cfg.Gossip
	gc.NodeName = cfg.NodeID
	gc.Meta = gossip.Meta{Role: gossip.RoleWorker, HTTPAddr: w.httpURL, Pool: cfg.Inventory.Pool, AZ: cfg.AZ, Cloud: cfg.Cloud}
	w.meta = gc.Meta
	if gc.Logger == nil {
		gc.Logger = cfg.Logger
	}
	if w.gossip, err = gossip.New(gc); err != nil {
		if w.httpLn != nil {
			_ = w.httpLn.Close()
		}
		return nil, fmt.Errorf("worker gossip: %w", err)
	}
	if d, ok := cfg.Driver.(interface{ useTemplates(TemplateSource) }); ok {
		d.useTemplates(w)
	}
	if r, ok := cfg.Driver.(retainer); ok && r.retained() != nil {
		w.retain = r.retained()
		w.retain.setMaxAge(cfg.RetainFinished)
	}
	return w, nil
}

// driverRuntimes is what the node offers when its inventory names
// nothing: what the driver knows it offers, else what DetectRuntimes finds.
func driverRuntimes(d Driver) []string {
	if l, ok := d.(runtimeLister); ok {
		return l.Runtimes()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return DetectRuntimes(ctx)
}

// Start joins gossip and runs registration and the assignment loop.
func (w *Worker) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if len(w.cfg.Join) > 0 {
			if _, err := w.gossip.Join(ctx, w.cfg.Join); err != nil && ctx.Err() == nil {
				w.logger.Error("gossip join failed", "err", err)
			}
		}
		w.run(ctx)
	}()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.followKeyring(ctx)
	}()
	if w.httpLn != nil {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.serveHTTP(ctx)
		}()
	}
	if w.retain != nil {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.retain.run(ctx) // what an earlier run kept expires too
		}()
	}
	if events := w.cfg.Driver.Events(); events != nil {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.reportEvents(ctx, events)
		}()
	}
	return nil
}

// GossipAddr is the worker's gossip address.
func (w *Worker) GossipAddr() string { return w.gossip.LocalAddr() }

// NodeID is the node this worker registers as.
func (w *Worker) NodeID() string { return w.cfg.NodeID }

// Gossip exposes the gossip member, for tests that watch membership and
// keyrings from the worker's side.
func (w *Worker) Gossip() *gossip.Gossip { return w.gossip }

// Shutdown leaves gossip gracefully and stops every task.
func (w *Worker) Shutdown(ctx context.Context) error {
	if !w.markStopped() {
		return nil
	}
	err := w.gossip.Leave(5 * time.Second)
	return errors.Join(err, w.stop(ctx))
}

// Kill stops abruptly, as a crash would: no gossip leave.
func (w *Worker) Kill() error {
	if !w.markStopped() {
		return nil
	}
	return w.stop(context.Background())
}

func (w *Worker) markStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.stopped = true
	return true
}

func (w *Worker) stop(ctx context.Context) error {
	if w.cancel != nil {
		w.cancel()
	}
	if w.httpLn != nil {
		_ = w.httpLn.Close() // Serve closes it too; this covers a worker never started
	}
	err := w.gossip.Shutdown()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	return errors.Join(err, w.cfg.Driver.StopAll(ctx))
}

// servers lists candidate HTTP addresses: configured ones, then every
// server gossip knows about, alive first.
func (w *Worker) servers() []string {
	out := append([]string(nil), w.cfg.Servers...)
	for _, m := range w.gossip.Members() {
		if m.Meta.Role == gossip.RoleServer && m.Status == gossip.StatusAlive && m.Meta.HTTPAddr != "" {
			out = append(out, m.Meta.HTTPAddr)
		}
	}
	return out
}

// client returns a client for the server in use; rotate moves to the next
// after a failure.
func (w *Worker) client() (*api.Client, error) {
	list := w.servers()
	if len(list) == 0 {
		return nil, errors.New("no server known yet")
	}
	w.mu.Lock()
	addr := list[w.server%len(list)]
	w.mu.Unlock()
	return w.newClient(addr)
}

func (w *Worker) rotate() {
	w.mu.Lock()
	w.server++
	w.mu.Unlock()
}
