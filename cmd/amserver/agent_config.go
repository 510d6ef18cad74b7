package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/worker"
)

// flagsError marks a bad flag value or config file: a usage error.
type flagsError struct{ err error }

func (e *flagsError) Error() string { return e.err.Error() }
func (e *flagsError) Unwrap() error { return e.err }

func badFlags(err error) error { return &flagsError{err: err} }

func (f *agentFlags) serverConfig(logger *slog.Logger) (agent.Config, error) {
	id, err := defaultNodeID(f.nodeID)
	if err != nil {
		return agent.Config{}, err
	}
	if f.dataDir == "" {
		return agent.Config{}, errors.New("--data-dir is required for a server")
	}
	if err := f.security.checkServer(); err != nil {
		return agent.Config{}, err
	}
	if f.maxProvisioned < 0 || f.provisionTimeout <= 0 {
		return agent.Config{}, errors.New("--max-provisioned-nodes must be >= 0 and --provision-timeout positive")
	}
	if f.rolloutSettle <= 0 {
		// The leader would take 5 s for it: say so rather than run with
		// another window than the one asked for.
		return agent.Config{}, fmt.Errorf("--rollout-settle must be positive, not %s", f.rolloutSettle)
	}
	logStore, err := raftstore.ParseLogStore(f.raftLogStore)
	if err != nil {
		return agent.Config{}, fmt.Errorf("--raft-log-store: %w", err)
	}
	if f.heapHeadroomMiB < 0 || f.heapHeadroomMiB > maxHeapHeadroomMiB {
		return agent.Config{}, fmt.Errorf("--heap-headroom-mib must be 0 (off) to %d, not %d", maxHeapHeadroomMiB, f.heapHeadroomMiB)
	}
	adv, err := f.advertiseIP()
	if err != nil {
		return agent.Config{}, err
	}
	httpHost, httpPort, err := splitAddr(f.httpAddr, f.bind, agent.DefaultHTTPPort)
	if err != nil {
		return agent.Config{}, fmt.Errorf("--http-addr: %w", err)
	}
	raftHost, raftPort, err := splitAddr(f.raftAddr, f.bind, agent.DefaultRaftPort)
	if err != nil {
		return agent.Config{}, fmt.Errorf("--raft-addr: %w", err)
	}
	gc, err := f.gossipConfig(logger)
	if err != nil {
		return agent.Config{}, err
	}
	acl, err := f.acl.config()
	if err != nil {
		return agent.Config{}, err
	}
	return agent.Config{
		NodeID: id, DataDir: f.dataDir, Recover: f.recoverVote, RaftLogStore: logStore,
		HTTPAddr: joinPort(httpHost, httpPort), HTTPAdvertise: joinPort(adv, httpPort),
		RaftAddr: joinPort(raftHost, raftPort), RaftAdvertise: joinPort(adv, raftPort),
		Join: f.join, BootstrapExpect: f.bootstrapExpect, Bootstrap: f.bootstrapExpect == 1,
		TimeoutScale: f.timeoutScale, DeadServerCleanup: f.deadServerCleanup, DeleteTimeout: f.deleteTimeout, RolloutSettle: f.rolloutSettle,
		MaxExpensive: f.maxExpensive, MaxExpensivePerCaller: f.maxExpensiveCaller, WriteLatencyFactor: yieldFactor(f.expensiveYield),
		Elastic: agent.ElasticConfig{MaxProvisionedNodes: f.maxProvisioned, CallTimeout: f.provisionTimeout, AllowExec: f.allowExec,
			AllowHosts: f.provisionerAllow},
		Gossip: gc, ACL: acl, TLS: f.security.tlsFiles(), Logger: logger,
	}, nil
}

func (f *agentFlags) workerConfig(logger *slog.Logger) (worker.Config, error) {
	id, err := defaultNodeID(f.nodeID)
	if err != nil {
		return worker.Config{}, err
	}
	inv, err := f.inventory.spec(f.pool, f.az, f.cloud)
	if err != nil {
		return worker.Config{}, err
	}
	driver, err := newDriver(f.inventory.driver, id, f.workerDataDir(id), logger)
	if err != nil {
		return worker.Config{}, err
	}
	gc, err := f.gossipConfig(logger)
	if err != nil {
		return worker.Config{}, err
	}
	// A worker's log port is ephemeral unless fixed (a firewall): gossip
	// publishes it, and workers sharing a host do not collide.
	httpHost, httpPort, err := splitAddr(f.httpAddr, f.bind, 0)
	if err != nil {
		return worker.Config{}, fmt.Errorf("--http-addr: %w", err)
	}
	return worker.Config{
		HTTPAddr: net.JoinHostPort(httpHost, strconv.Itoa(httpPort)),
		NodeID:   id, Inventory: inv, AZ: f.az, Cloud: f.cloud, Driver: driver,
		Servers: f.servers, Token: os.Getenv("AMSERVER_TOKEN"), Join: f.join, Gossip: gc, Logger: logger,
		TLS: f.security.tlsFiles(), RetainFinished: f.retainFinished,
	}, nil
}

// newDriver makes the worker's driver: none simulates; real (exec is
// accepted as a synonym) runs each launch with the driver of its runtime.
func newDriver(name, nodeID, dataDir string, logger *slog.Logger) (worker.Driver, error) {
	switch name {
	case "", api.DriverNone:
		return worker.NewNoneDriver(), nil
	case "real", api.DriverExec:
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return worker.NewDispatcher(ctx, worker.RuntimeConfig{NodeID: nodeID, DataDir: dataDir, Logger: logger})
	default:
		return nil, fmt.Errorf("--driver %q: want real, exec or none", name)
	}
}

// workerDataDir holds the worker's assignments (their output, unpacked
// templates), its template cache and compiled wasm modules: worker/ in
// --data-dir, beside a server's raft/ when the agent is both.
func (f *agentFlags) workerDataDir(id string) string {
	if f.dataDir != "" {
		return filepath.Join(f.dataDir, "worker")
	}
	return filepath.Join(os.TempDir(), "amserver-"+id)
}

// splitAddr resolves an address flag: empty means bind:defaultPort; a bare
// port or a host without port is completed.
func splitAddr(addr, bind string, defaultPort int) (string, int, error) {
	if addr == "" {
		return bind, defaultPort, nil
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if host == "" {
		host = bind
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has an invalid port", addr)
	}
	return host, port, nil
}

func joinPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// advertiseIP is --advertise, the bind address when it is specific, or the
// first non-loopback IPv4 address of this host (a container's own address).
func (f *agentFlags) advertiseIP() (string, error) {
	if f.advertise != "" {
		return f.advertise, nil
	}
	if ip := net.ParseIP(f.bind); ip != nil && !ip.IsUnspecified() {
		return f.bind, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("detect advertise address: %w", err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && !ipnet.IP.IsLoopback() && ipnet.IP.To4() != nil {
			return ipnet.IP.String(), nil
		}
	}
	return "", errors.New("cannot detect an address to advertise: set --advertise")
}

// applyEnv sets every agent flag the command line did not set from
// AMSERVER_<FLAG> (upper case, dashes as underscores): AMSERVER_DATA_DIR,
// AMSERVER_ACL_ENABLED, AMSERVER_CONFIG... A list flag takes a comma-separated
// value. It runs before the config file, so the order of precedence is
// command line, then environment, then file. Containers and overlays can
// then add settings without repeating a whole command.
func applyEnv(cmd *cobra.Command, getenv func(string) string) error {
	var err error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed {
			return
		}
		name := "AMSERVER_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		v := getenv(name)
		if v == "" {
			return
		}
		items := []string{v}
		if strings.HasSuffix(fl.Value.Type(), "Slice") || strings.HasSuffix(fl.Value.Type(), "Array") {
			items = strings.Split(v, ",")
		}
		for _, item := range items {
			if serr := cmd.Flags().Set(fl.Name, strings.TrimSpace(item)); serr != nil {
				err = fmt.Errorf("%s: %w", name, serr)
				return
			}
		}
	})
	return err
}

// applyConfigFile sets every flag named in a JSON or YAML file that the
// command line did not set; list values set the flag once per element.
func applyConfigFile(cmd *cobra.Command, path string) error {
	values, err := readConfigFile(path)
	if err != nil {
		return err
	}
	flags := cmd.Flags()
	for key, v := range values {
		fl := flags.Lookup(key)
		if fl == nil {
			return fmt.Errorf("--config %s: unknown setting %q", path, key)
		}
		if flags.Changed(key) {
			continue
		}
		if err := setFlag(flags, fl, v); err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, key, err)
		}
	}
	return nil
}

// readConfigFile reads --config's settings (none without a file).
func readConfigFile(path string) (map[string]any, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return values, nil
}

func setFlag(flags *pflag.FlagSet, fl *pflag.Flag, v any) error {
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	for _, item := range list {
		if err := flags.Set(fl.Name, strings.TrimSpace(fmt.Sprint(item))); err != nil {
			return err
		}
	}
	return nil
}

// yieldFactor maps --http-expensive-yield to httpapi's setting, where 0
// means the default and a negative value off.
func yieldFactor(f float64) float64 {
	if f <= 0 {
		return -1
	}
	return f
}
