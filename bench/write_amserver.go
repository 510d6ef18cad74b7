package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

func amserverWriteSystem(store raftstore.LogStore) writeSystem {
	return writeSystem{
		name: "amserver", verb: "creates/s",
		note: fmt.Sprintf("POST /v1/bundles round-robin over 3 servers (followers forward), TCP Raft on loopback, %s log store on disk, fsync on", store),
		start: func(ctx context.Context, o Options, dir string, _ int) (writeTarget, error) {
			return startAmserverWrite(ctx, o, dir, store)
		},
	}
}

// amserverWrite is a 3-server amserver cluster started the way the agent
// benchmark and the README do it: real TCP Raft, stores on disk, and
// bootstrap through gossip on loopback.
type amserverWrite struct {
	servers []*agent.Server
	clients []*api.Client
	hc      *http.Client // the clients' shared connection pool
}

func startAmserverWrite(ctx context.Context, o Options, dir string, store raftstore.LogStore) (*amserverWrite, error) {
	logger := slog.New(writeLevelHandler{Handler: o.Logger.Handler(), min: slog.LevelWarn})
	a := &amserverWrite{}
	var join []string
	for i := range 3 {
		cfg := agent.Config{
			NodeID: fmt.Sprintf("s%d", i+1), DataDir: filepath.Join(dir, fmt.Sprint(i+1)),
			HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", BootstrapExpect: 3, Join: join, Logger: logger,
			RaftLogStore: store,
		}
		cfg.Gossip = gossip.DefaultConfig()
		cfg.Gossip.BindAddr, cfg.Gossip.BindPort = "127.0.0.1", 0
		s, err := agent.NewServer(cfg, agent.Deps{})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("new server %s: %w", cfg.NodeID, err), a.close())
		}
		a.servers = append(a.servers, s)
		if err := s.Start(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("start server %s: %w", cfg.NodeID, err), a.close())
		}
		join = append(join, s.Gossip().LocalAddr())
	}
	if err := a.waitReady(ctx); err != nil {
		return nil, errors.Join(err, a.close())
	}
	return a, nil
}

// waitReady waits until the cluster has a leader that serves linearizable
// reads (it has caught up in its term), then creates the bench pool.
func (a *amserverWrite) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		for _, s := range a.servers {
			c, err := api.New(s.HTTPAddr(), api.WithMaxRetries(0))
			if err != nil {
				return fmt.Errorf("amserver client: %w", err)
			}
			if _, last = c.PutPool(ctx, api.Pool{Name: "bench"}); last != nil {
				continue
			}
			if _, _, last = c.Pool(ctx, "bench", nil); last == nil {
				return nil
			}
		}
		writeSleep(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("amserver cluster not ready within 60s: %w", errors.Join(last, ctx.Err()))
}

// prepare gives every server a client whose connection pool holds conc
// idle connections, so that no write waits for a dial.
func (a *amserverWrite) prepare(conc int) error {
	if a.hc != nil {
		a.hc.CloseIdleConnections()
	}
	a.hc = writeHTTPClient(conc)
	a.clients = a.clients[:0]
	for _, s := range a.servers {
		c, err := api.New(s.HTTPAddr(), api.WithHTTPClient(a.hc))
		if err != nil {
			return fmt.Errorf("amserver client: %w", err)
		}
		a.clients = append(a.clients, c)
	}
	return nil
}

func (a *amserverWrite) write(ctx context.Context, w int, seq int64) error {
	if _, err := a.clients[w%len(a.clients)].CreateBundle(ctx, writeSpec(seq)); err != nil {
		return fmt.Errorf("create bundle: %w", err)
	}
	return nil
}

func (a *amserverWrite) close() error {
	if a.hc != nil {
		a.hc.CloseIdleConnections()
	}
	var errs []error
	for _, s := range a.servers {
		if err := s.Kill(); err != nil {
			errs = append(errs, fmt.Errorf("stop amserver server: %w", err))
		}
	}
	return errors.Join(errs...)
}

func writeHTTPClient(conc int) *http.Client {
	tr := &http.Transport{
		MaxIdleConns: 3 * conc, MaxIdleConnsPerHost: conc,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// writeLevelHandler drops records below min, so that the clusters under
// test log only their warnings into the report's log.
type writeLevelHandler struct {
	slog.Handler
	min slog.Level
}

func (h writeLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h writeLevelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return writeLevelHandler{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h writeLevelHandler) WithGroup(name string) slog.Handler {
	return writeLevelHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}
