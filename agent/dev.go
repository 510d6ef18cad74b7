package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/worker"
)

// DevConfig configures the embedded dev cluster (DESIGN §1).
type DevConfig struct {
	HTTPAddr string // first server's API; the others use the next ports up
	Servers  int
	Workers  int
	DataDir  string // empty: a temporary directory removed on Shutdown
	Logger   *slog.Logger
	Deps     Deps
	// DeleteTimeout bounds the deletion saga (default 60 s).
	DeleteTimeout time.Duration
	// Driver makes each simulated worker's driver (default: none).
	Driver func() worker.Driver
	// RealDrivers, when Driver is nil, gives every worker the real drivers
	// (worker.Dispatcher: compose, docker, wasm, exec by the launch's
	// runtime), each with its own directory under the data dir. The
	// workers share this host's Docker: each labels its containers with
	// its own node id, so none touches another's.
	RealDrivers bool
	// Configure, when set, adjusts each server's configuration.
	Configure func(*Config)
}

// DevCluster is servers and simulated workers in one process.
type DevCluster struct {
	Servers []*Server
	Workers []*worker.Worker
	tmpDir  string
}

// devDomains spreads simulated workers over 3 AZs and 2 clouds.
var devDomains = []struct{ az, cloud string }{{"az-1", "cloud-a"}, {"az-2", "cloud-a"}, {"az-3", "cloud-b"}}

// StartDev starts the servers (bootstrapping Raft through gossip when there
// are several) and the workers, and waits until a leader is ready.
func StartDev(ctx context.Context, cfg DevConfig) (*DevCluster, error) {
	if cfg.Servers <= 0 {
		cfg.Servers = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &DevCluster{}
	dataDir := cfg.DataDir
	if dataDir == "" {
		tmp, err := os.MkdirTemp("", "amserver-dev-")
		if err != nil {
			return nil, fmt.Errorf("dev data dir: %w", err)
		}
		d.tmpDir, dataDir = tmp, tmp
	}
	if err := d.startServers(ctx, cfg, dataDir); err != nil {
		_ = d.Shutdown(context.Background())
		return nil, err
	}
	if err := d.waitLeader(ctx); err != nil {
		_ = d.Shutdown(context.Background())
		return nil, err
	}
	if err := d.startWorkers(ctx, cfg, dataDir); err != nil {
		_ = d.Shutdown(context.Background())
		return nil, err
	}
	return d, nil
}

// devPorts returns server i's HTTP, Raft and gossip ports: fixed offsets from
// the first HTTP port so that a reused --data-dir finds its peers again.
func devPorts(base, i int) (httpPort, raftPort, gossipPort int) {
	if base == 0 {
		return 0, 0, 0
	}
	p := base + 10*i
	return p, p + 1, p + 2
}

func (d *DevCluster) startServers(ctx context.Context, cfg DevConfig, dataDir string) error {
	host, portStr, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("dev http address %q: %w", cfg.HTTPAddr, err)
	}
	base, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("dev http port %q: %w", portStr, err)
	}
	var join []string
	for i := range cfg.Servers {
		hp, rp, gp := devPorts(base, i)
		sc := Config{
			NodeID: fmt.Sprintf("server-%d", i+1), DataDir: filepath.Join(dataDir, fmt.Sprintf("server-%d", i+1)),
			HTTPAddr: net.JoinHostPort(host, strconv.Itoa(hp)), RaftAddr: net.JoinHostPort(host, strconv.Itoa(rp)),
			Bootstrap: cfg.Servers == 1, Join: join, Logger: cfg.Logger,
			DeadServerCleanup: 30 * time.Second, DeleteTimeout: cfg.DeleteTimeout,
		}
		if cfg.Servers > 1 {
			sc.BootstrapExpect = cfg.Servers
		}
		sc.Gossip = gossip.DefaultConfig()
		sc.Gossip.BindAddr, sc.Gossip.BindPort = host, gp
		if cfg.Configure != nil {
			cfg.Configure(&sc)
		}
		s, err := NewServer(sc, cfg.Deps)
		if err != nil {
			return err
		}
		d.Servers = append(d.Servers, s)
		if err := s.Start(ctx); err != nil {
			return err
		}
		join = append(join, s.gossip.LocalAddr())
	}
	return nil
}

func (d *DevCluster) waitLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		for _, s := range d.Servers {
			if s.store.IsLeader() && s.store.Ready() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("dev cluster: no leader elected within 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *DevCluster) startWorkers(ctx context.Context, cfg DevConfig, dataDir string) error {
	join := []string{d.Servers[0].gossip.LocalAddr()}
	host, _, _ := net.SplitHostPort(cfg.HTTPAddr)
	var runtimes []string
	if cfg.Driver == nil && cfg.RealDrivers && cfg.Workers > 0 {
		runtimes = worker.DetectRuntimes(ctx) // once: every worker shares this host
	}
	for i := range cfg.Workers {
		wc := DevWorkerConfig(i)
		wc.Servers, wc.Join, wc.Logger = []string{d.Servers[0].HTTPAddr()}, join, cfg.Logger
		switch {
		case cfg.Driver != nil:
			wc.Driver = cfg.Driver()
		case cfg.RealDrivers:
			drv, err := worker.NewDispatcher(ctx, worker.RuntimeConfig{
				NodeID: wc.NodeID, DataDir: filepath.Join(dataDir, wc.NodeID), Runtimes: runtimes, Logger: cfg.Logger,
			})
			if err != nil {
				return fmt.Errorf("%s drivers: %w", wc.NodeID, err)
			}
			wc.Driver = drv
		}
		wc.Gossip = gossip.DefaultConfig()
		wc.Gossip.BindAddr, wc.Gossip.BindPort = host, 0
		wc.HTTPAddr = net.JoinHostPort(host, "0") // its assignments' logs
		w, err := worker.New(wc)
		if err != nil {
			return err
		}
		d.Workers = append(d.Workers, w)
		if err := w.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// DevWorkerConfig is simulated worker i (from 0) as the dev cluster starts
// it: worker-<i+1> in pool default, spread over 3 AZs and 2 clouds, with
// devInventory's resources. How it reaches the servers is the caller's to
// add. Tests start workers of the same shape through it.
func DevWorkerConfig(i int) worker.Config {
	dom := devDomains[i%len(devDomains)]
	return worker.Config{
		NodeID: fmt.Sprintf("worker-%d", i+1), AZ: dom.az, Cloud: dom.cloud,
		Inventory: devInventory(i, dom.az, dom.cloud),
	}
}

// devInventory gives simulated workers a varied but realistic inventory:
// GPUs on every other worker, a capture NIC on every third. Their none
// driver simulates any launch, so they advertise every runtime but
// Proxmox's: template and docker bundles place in the dev cluster too.
func devInventory(i int, az, cloud string) api.NodeSpec {
	n := api.NodeSpec{
		Pool: "default", TotalCapacity: 16, TotalCores: 16, TotalMemoryMiB: 32768,
		Labels:   map[string]string{"az": az, "cloud": cloud, "rack": fmt.Sprintf("r%d", i%4+1)},
		Runtimes: []string{api.RuntimeExec, api.RuntimeDocker, api.RuntimeCompose, api.RuntimeWasm},
	}
	if i%2 == 0 {
		n.GPUs = []api.GPU{{Index: 0, Model: "t4", TotalCapacity: 1}}
	}
	if i%3 == 0 {
		n.Capabilities = []api.Capability{{Name: "st2110-nic", Count: 2, Attributes: map[string]string{"speed": "25g"}}}
	}
	return n
}

// HTTPAddr is the first server's API address.
func (d *DevCluster) HTTPAddr() string { return d.Servers[0].HTTPAddr() }

// Shutdown stops workers, then servers, and removes a temporary data dir.
func (d *DevCluster) Shutdown(ctx context.Context) error {
	var errs []error
	for _, w := range d.Workers {
		errs = append(errs, w.Shutdown(ctx))
	}
	for i := len(d.Servers) - 1; i >= 0; i-- {
		errs = append(errs, d.Servers[i].Shutdown(ctx))
	}
	if d.tmpDir != "" {
		errs = append(errs, os.RemoveAll(d.tmpDir))
	}
	return errors.Join(errs...)
}
