package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/worker"
)

// foPool is the pool the failover suite's workers register in.
const foPool = "failover"

// foTopology is the shape of one failover trial's cluster.
type foTopology struct {
	servers, workers int
	gossip           gossip.Config // bind address and port are set per member
}

// foCluster is a failover trial's cluster, built with the constructors a
// deployment's main uses: servers with real TCP Raft on loopback and WAL
// stores on disk (fsync on), workers with their own gossip members, all
// gossiping over loopback UDP and TCP.
type foCluster struct {
	servers []*agent.Server
	workers map[string]*worker.Worker
	drivers map[string]*foDriver
	logger  *slog.Logger
}

func startFoCluster(ctx context.Context, dir string, topo foTopology, logger *slog.Logger) (*foCluster, error) {
	c := &foCluster{workers: map[string]*worker.Worker{}, drivers: map[string]*foDriver{}, logger: logger}
	if err := c.startServers(ctx, dir, topo); err != nil {
		return nil, errors.Join(err, c.kill())
	}
	if err := c.startWorkers(ctx, topo); err != nil {
		return nil, errors.Join(err, c.kill())
	}
	return c, nil
}

func (c *foCluster) startServers(ctx context.Context, dir string, topo foTopology) error {
	var join []string
	for i := range topo.servers {
		id := fmt.Sprintf("s%d", i+1)
		cfg := agent.Config{
			NodeID: id, DataDir: filepath.Join(dir, id),
			HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", Join: join, Logger: c.logger,
			BootstrapExpect: topo.servers, Bootstrap: topo.servers == 1,
		}
		cfg.Gossip = topo.gossip
		cfg.Gossip.BindAddr, cfg.Gossip.BindPort = "127.0.0.1", 0
		s, err := agent.NewServer(cfg, agent.Deps{})
		if err != nil {
			return fmt.Errorf("start server %s: %w", id, err)
		}
		c.servers = append(c.servers, s)
		if err := s.Start(ctx); err != nil {
			return fmt.Errorf("start server %s: %w", id, err)
		}
		join = append(join, s.Gossip().LocalAddr())
	}
	return nil
}

func (c *foCluster) startWorkers(ctx context.Context, topo foTopology) error {
	var servers, join []string
	for _, s := range c.servers {
		servers = append(servers, s.HTTPAddr())
		join = append(join, s.Gossip().LocalAddr())
	}
	for i := range topo.workers {
		id := fmt.Sprintf("w%d", i+1)
		az := fmt.Sprintf("az-%d", i%3+1)
		d := newFoDriver()
		wc := worker.Config{
			NodeID: id, AZ: az, Cloud: "cloud-a", Driver: d, Servers: servers, Join: join, Logger: c.logger,
			Inventory: api.NodeSpec{Pool: foPool, TotalCapacity: 16, TotalCores: 16,
				Labels: map[string]string{"az": az, "cloud": "cloud-a"}},
		}
		wc.Gossip = topo.gossip
		wc.Gossip.BindAddr, wc.Gossip.BindPort = "127.0.0.1", 0
		w, err := worker.New(wc)
		if err != nil {
			return fmt.Errorf("start worker %s: %w", id, err)
		}
		c.workers[id], c.drivers[id] = w, d
		if err := w.Start(ctx); err != nil {
			return fmt.Errorf("start worker %s: %w", id, err)
		}
	}
	return nil
}

// ready waits for a leader that acknowledges writes and for every worker to
// be registered and ready, and returns that leader.
func (c *foCluster) ready(ctx context.Context, within time.Duration) (*agent.Server, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		leader := c.leader(nil)
		if leader != nil && c.serving(ctx, leader) {
			return leader, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("failover cluster not ready within %s: %w", within, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serving is true once leader takes a write and sees every worker ready.
func (c *foCluster) serving(ctx context.Context, leader *agent.Server) bool {
	cl, err := api.New(leader.HTTPAddr(), api.WithMaxRetries(0))
	if err != nil {
		return false
	}
	nodes, _, err := cl.Nodes(ctx, api.NodeFilter{Pool: foPool, Status: api.NodeReady}, nil)
	if err != nil || len(nodes) != len(c.workers) {
		return false
	}
	_, err = cl.PutPool(ctx, api.Pool{Name: "ready-check"})
	return err == nil
}

// leader is the server that currently believes it leads, other than skip.
func (c *foCluster) leader(skip *agent.Server) *agent.Server {
	for _, s := range c.servers {
		if s != skip && s.Store().IsLeader() {
			return s
		}
	}
	return nil
}

// kill stops every member abruptly; members already killed are skipped.
func (c *foCluster) kill() error {
	var errs []error
	for _, w := range c.workers {
		errs = append(errs, w.Kill())
	}
	for _, s := range c.servers {
		errs = append(errs, s.Kill())
	}
	return errors.Join(errs...)
}

// foDriver is the none driver that also notes when it is first told to run
// a bundle as primary at each epoch: the moment a backup worker learns it
// has been promoted.
type foDriver struct {
	*worker.NoneDriver
	mu      sync.Mutex
	primary map[string]foPromotion // bundle id → latest epoch seen as primary
	changed chan struct{}          // closed and replaced on every new entry
}

type foPromotion struct {
	epoch uint64
	at    time.Time
}

func newFoDriver() *foDriver {
	return &foDriver{NoneDriver: worker.NewNoneDriver(), primary: map[string]foPromotion{}, changed: make(chan struct{})}
}

// Ensure implements worker.Driver.
func (d *foDriver) Ensure(ctx context.Context, a api.Assignment) (string, string) {
	if a.Role == api.RolePrimary && a.Desired == api.DesiredRun && a.BundleID != "" {
		d.mu.Lock()
		if p, ok := d.primary[a.BundleID]; !ok || a.Epoch > p.epoch {
			d.primary[a.BundleID] = foPromotion{epoch: a.Epoch, at: time.Now()}
			close(d.changed)
			d.changed = make(chan struct{})
		}
		d.mu.Unlock()
	}
	return d.NoneDriver.Ensure(ctx, a)
}

// waitPrimary returns when the driver was first told to run bundle as
// primary at epoch or later.
func (d *foDriver) waitPrimary(ctx context.Context, bundle string, epoch uint64) (time.Time, error) {
	for {
		d.mu.Lock()
		p, ok := d.primary[bundle]
		changed := d.changed
		d.mu.Unlock()
		if ok && p.epoch >= epoch {
			return p.at, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("backup worker never ran %s as primary at epoch %d: %w", bundle, epoch, ctx.Err())
		}
	}
}
