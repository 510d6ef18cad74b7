package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/httpapi"
	"github.com/amserver/amserver/internal/memlimit"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/worker"
)

// agentFlags are the flags of `amserver agent` (DESIGN §8).
type agentFlags struct {
	server, worker     bool
	nodeID, dataDir    string
	recoverVote        bool
	raftLogStore       string
	bind, advertise    string
	httpAddr, raftAddr string
	gossipAddr         string
	bootstrapExpect    int
	join, servers      []string
	pool, az, cloud    string
	retainFinished     time.Duration
	timeoutScale       float64
	probeInterval      time.Duration
	probeTimeout       time.Duration
	suspicionMult      int
	suspicionMaxMult   int
	deadServerCleanup  time.Duration
	deleteTimeout      time.Duration
	rolloutSettle      time.Duration
	maxExpensive       int
	maxExpensiveCaller int
	expensiveYield     float64
	heapHeadroomMiB    int
	maxProvisioned     int
	allowExec          bool
	provisionerAllow   []string
	provisionTimeout   time.Duration
	logLevel           string
	pprofAddr          string
	config             string
	// fixed are the flags the command line or the environment set: a
	// reload of the config file (SIGHUP) leaves them as they are.
	fixed     map[string]bool
	inventory inventoryFlags
	acl       aclFlags
	security  securityFlags
}

func newAgentCmd() *cobra.Command { return newAgentCmdFor(&agentFlags{}) }

// newAgentCmdFor binds the command's flags to f (tests read them back).
func newAgentCmdFor(f *agentFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run an amserver server (--server) or worker (--worker)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd, os.Getenv); err != nil {
				return badFlags(err)
			}
			f.fixed = map[string]bool{}
			cmd.Flags().Visit(func(fl *pflag.Flag) { f.fixed[fl.Name] = true })
			if err := applyConfigFile(cmd, f.config); err != nil {
				return badFlags(err)
			}
			if f.server == f.worker {
				return badFlags(errors.New("choose exactly one of --server and --worker"))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := newLogger(f.logLevel)
			if f.server {
				return runServer(ctx, f, logger)
			}
			return runWorker(ctx, f, logger)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.server, "server", false, "run as a server (Raft voter, gossip member, HTTP API)")
	fl.BoolVar(&f.worker, "worker", false, "run as a worker (registers inventory, runs assignments)")
	fl.StringVar(&f.nodeID, "node-id", "", "node id; defaults to the hostname")
	fl.StringVar(&f.dataDir, "data-dir", "", "data directory: Raft data on servers (required), task files on workers")
	fl.BoolVar(&f.recoverVote, "recover", false, "server: start although the data directory lost its stored Raft term and vote (an emptied or missing log store next to snapshots); a server that voted in the current term may then vote twice")
	fl.StringVar(&f.raftLogStore, "raft-log-store", string(raftstore.LogStoreAuto), "server: where the Raft log and vote are kept: wal (segment files, one fsync per append), bolt (raft.db, what servers before wal wrote), or auto (the store the data directory holds; wal for a new one)")
	fl.StringVar(&f.bind, "bind", "0.0.0.0", "IP address to listen on")
	fl.StringVar(&f.advertise, "advertise", "", "IP address other nodes use to reach this one; detected when empty")
	fl.StringVar(&f.httpAddr, "http-addr", "", fmt.Sprintf("HTTP API address (default bind:%d); a worker serves its assignments' logs there (default bind:0, an ephemeral port it publishes in gossip)", agent.DefaultHTTPPort))
	fl.StringVar(&f.raftAddr, "raft-addr", "", fmt.Sprintf("Raft address (default bind:%d)", agent.DefaultRaftPort))
	fl.StringVar(&f.gossipAddr, "gossip-addr", "", fmt.Sprintf("gossip address, TCP and UDP (default bind:%d)", agent.DefaultGossipPort))
	fl.IntVar(&f.bootstrapExpect, "bootstrap-expect", 0, "bootstrap Raft once this many servers are in gossip")
	fl.StringArrayVar(&f.join, "join", nil, "gossip address of a member to join (repeatable)")
	fl.StringArrayVar(&f.servers, "servers", nil, "worker: HTTP address of a server to use before gossip finds them (repeatable)")
	fl.StringVar(&f.pool, "pool", "default", "worker: the pool to register in")
	fl.StringVar(&f.az, "az", "", "failure domain: availability zone label")
	fl.StringVar(&f.cloud, "cloud", "", "failure domain: cloud label")
	fl.DurationVar(&f.retainFinished, "retain-finished", worker.DefaultRetainFinished, "worker: keep a finished batch job's output readable (amserver logs) this long after it stops, at most 256 jobs' (0: the default; negative: keep none)")
	fl.Float64Var(&f.timeoutScale, "timeout-scale", 1, "multiplier for every Raft timeout (raise on slow or loaded hosts)")
	gd := gossip.DefaultConfig()
	fl.DurationVar(&f.probeInterval, "gossip-probe-interval", gd.ProbeInterval, "how often a member probes another; dead-node detection scales with it (same on every member)")
	fl.DurationVar(&f.probeTimeout, "gossip-probe-timeout", gd.ProbeTimeout, "wait for a direct probe ack before asking others to probe; below --gossip-probe-interval")
	fl.IntVar(&f.suspicionMult, "gossip-suspicion-mult", gd.SuspicionMult, "probe intervals a suspect member has to refute before it is declared dead (× log10 of members past 10)")
	fl.IntVar(&f.suspicionMaxMult, "gossip-suspicion-max-mult", gd.SuspicionMaxMult, "how many times longer a suspect has while too few members confirm the suspicion")
	fl.StringArrayVar(&f.provisionerAllow, "provisioner-allow", nil, "server: a host an elastic pool's webhook provisioner may be called at: host, host:port, *.domain, IP or CIDR (repeatable; none allowed by default, and loopback, link-local and metadata addresses only when listed as an IP or CIDR)")
	fl.BoolVar(&f.allowExec, "elastic-allow-exec", false, "server: run elastic pools' command provisioners on this host (anyone with a write token can set a pool's command)")
	fl.IntVar(&f.maxProvisioned, "max-provisioned-nodes", 0, "server: cap on nodes elastic pools may provision, spawning ones included, across every pool (0 = none)")
	fl.DurationVar(&f.provisionTimeout, "provision-timeout", 2*time.Minute, "server: bound on one call of an elastic pool's provisioner (retried with backoff)")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.pprofAddr, "pprof-addr", "", "server: serve Go runtime profiles (/debug/pprof/) at this address, without ACLs (off when empty; use a loopback address)")
	fl.StringVar(&f.config, "config", "", "JSON or YAML file of flag values (command-line flags win)")
	f.registerServerTuning(fl)
	f.inventory.register(fl)
	f.acl.register(fl)
	f.security.register(fl)
	return cmd
}

// registerServerTuning registers the server's housekeeping timeouts and
// its bounds on expensive API requests.
func (f *agentFlags) registerServerTuning(fl *pflag.FlagSet) {
	fl.DurationVar(&f.deadServerCleanup, "dead-server-cleanup", 5*time.Minute, "remove a server gossip reports dead after this long")
	fl.DurationVar(&f.deleteTimeout, "delete-timeout", 60*time.Second, "purge a deleting bundle after this long even if its jobs did not confirm they stopped")
	fl.DurationVar(&f.rolloutSettle, "rollout-settle", 5*time.Second, "server: a replica a service rollout relaunched counts available once it has run this long (the leader's clock)")
	fl.IntVar(&f.maxExpensive, "http-max-expensive", 0, "server: expensive API requests (lists, event replays, plans) built and sent at once; more wait up to 5s, then get 429 (0: one per core, at least 2)")
	fl.IntVar(&f.maxExpensiveCaller, "http-max-expensive-per-caller", 0, "server: of those, how many one token (or, without one, one client address) may have (0: a quarter of them, at least 1)")
	fl.IntVar(&f.heapHeadroomMiB, "heap-headroom-mib", defaultHeapHeadroomMiB, "server: let the Go heap grow at most this far past what the last collection found live (a soft memory limit that follows the state) before collecting again; GOGC still applies below it. It trades the collector's CPU for memory (0: off, as is a GOMEMLIMIT in the environment)")
	fl.Float64Var(&f.expensiveYield, "http-expensive-yield", httpapi.DefaultWriteLatencyFactor, "server: expensive requests yield to writes: while the median latency of the writes through this server is past this multiple of its lowest in the last minute, each expensive slot rests between uses, its share of the time halving every half second down to 1/32 (0: off)")
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func runServer(ctx context.Context, f *agentFlags, logger *slog.Logger) error {
	cfg, err := f.serverConfig(logger)
	if err != nil {
		return badFlags(err)
	}
	srv, err := agent.NewServer(cfg, agent.Deps{})
	if err != nil {
		return err
	}
	memlimit.Start(ctx, uint64(f.heapHeadroomMiB)<<20, logger)
	stopPprof, err := servePprof(ctx, f.pprofAddr, logger)
	if err != nil {
		return badFlags(err)
	}
	defer stopPprof()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	logger.Info("amserver server running", "id", cfg.NodeID, "http", srv.HTTPURL(), "gossip", srv.Gossip().LocalAddr())
	untilDone(ctx, logger, func() error {
		acl, err := f.reloadACL()
		if err != nil {
			return err
		}
		return srv.Reload(ctx, acl)
	})
	logger.Info("shutting down: transferring leadership and leaving gossip")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	return srv.Shutdown(sctx)
}

// defaultHeapHeadroomMiB bounds the garbage a server holds: with GOGC
// alone a 100,000-bundle leader's resident set rose 284 to 308 MiB over
// idle in the 10-minute soak (issue 21's goal is 256), with 256 MiB of
// headroom 165, the collector's CPU unchanged (docs/performance.md, "Load
// held"). It was off while the state was 500 MB of heap and reads were
// unbounded: the collector then ran half as much again and cost heartbeats.
const defaultHeapHeadroomMiB = 256

// maxHeapHeadroomMiB (1 PiB) keeps the limit's sum inside an int64.
const maxHeapHeadroomMiB = 1 << 30

// shutdownBudget is how long SIGTERM may take: hand leadership over,
// leave gossip, let requests in flight finish, stop Raft.
const shutdownBudget = 5 * time.Second

// untilDone waits for ctx (SIGINT, SIGTERM), running reload on every
// SIGHUP: a server re-reads its TLS files and the ACL tokens of its
// configuration, a worker its TLS files. A failed reload keeps what runs.
func untilDone(ctx context.Context, logger *slog.Logger, reload func() error) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for ctx.Err() == nil {
		select {
		case <-hup:
			if err := reload(); err != nil {
				logger.Error("reload failed; the running configuration stays", "err", err)
			}
		case <-ctx.Done():
		}
	}
}

func runWorker(ctx context.Context, f *agentFlags, logger *slog.Logger) error {
	cfg, err := f.workerConfig(logger)
	if err != nil {
		return badFlags(err)
	}
	w, err := worker.New(cfg)
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	driver := f.inventory.driver
	if driver == "" {
		driver = api.DriverNone
	}
	logger.Info("amserver worker running", "id", cfg.NodeID, "pool", cfg.Inventory.Pool, "driver", driver,
		"gossip", w.GossipAddr(), "http", w.HTTPURL())
	if driver == api.DriverNone {
		// The default: its jobs read running while nothing runs, which an
		// operator who left out --driver would not otherwise learn.
		logger.Warn("driver none: this worker runs nothing and simulates its jobs' statuses; --driver real runs them")
	}
	untilDone(ctx, logger, w.ReloadTLS)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Shutdown(sctx)
}

func (f *agentFlags) gossipConfig(logger *slog.Logger) (gossip.Config, error) {
	gc := gossip.DefaultConfig()
	gc.Logger = logger
	if f.probeTimeout >= f.probeInterval || f.suspicionMult < 1 || f.suspicionMaxMult < 1 {
		return gc, fmt.Errorf("--gossip-probe-timeout %s must be below --gossip-probe-interval %s, and the suspicion multipliers at least 1",
			f.probeTimeout, f.probeInterval)
	}
	gc.ProbeInterval, gc.ProbeTimeout = f.probeInterval, f.probeTimeout
	gc.SuspicionMult, gc.SuspicionMaxMult = f.suspicionMult, f.suspicionMaxMult
	host, port, err := splitAddr(f.gossipAddr, f.bind, agent.DefaultGossipPort)
	if err != nil {
		return gc, fmt.Errorf("--gossip-addr: %w", err)
	}
	gc.BindAddr, gc.BindPort = host, port
	if gc.SecretKey, err = f.security.gossipKey(); err != nil {
		return gc, err
	}
	if adv, err := f.advertiseIP(); err == nil {
		gc.AdvertiseAddr, gc.AdvertisePort = adv, port
	} else {
		return gc, err
	}
	return gc, nil
}

func defaultNodeID(id string) (string, error) {
	if id != "" {
		return id, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("--node-id is required: %w", err)
	}
	return host, nil
}

// detectedCores is the worker's core count when --cores is not given.
func detectedCores() int { return runtime.NumCPU() }

// detectedMemoryMiB is a variable so that tests can pin it.
var detectedMemoryMiB = worker.DetectMemoryMiB
