package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// clusterTimeoutScale doubles Raft's LAN timeouts, as the agent's own
// multi-server tests do: three servers sharing two cores see goroutine
// scheduling delays of 100-200 ms under full load (runtime
// /sched/latencies), and at the defaults (250 ms lease) the leader stepped
// down mid-run. On machines of their own the defaults hold.
const clusterTimeoutScale = 2

// benchCluster is n amserver servers in this process, as the tests'
// internal/testcluster builds them with TCP(): real TCP Raft on loopback,
// WAL log and stable stores and file snapshots on disk (fsync on), gossip
// on loopback, bootstrapped through gossip with --bootstrap-expect. It is
// built here rather than there because a benchmark run has no testing.TB
// and reports errors instead of failing a test.
type benchCluster struct {
	servers []*agent.Server
	dir     string
}

func startBenchCluster(ctx context.Context, parent string, n int, logger *slog.Logger) (*benchCluster, error) {
	// A fresh directory each run: servers finding an earlier run's Raft
	// state would wait for peers at that run's ports.
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "cluster-")
	if err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	c := &benchCluster{dir: dir}
	var join []string
	for i := range n {
		cfg := agent.Config{
			NodeID: fmt.Sprintf("s%d", i+1), DataDir: filepath.Join(dir, fmt.Sprint(i)),
			HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", BootstrapExpect: n, Join: join,
			Logger: logger, TimeoutScale: clusterTimeoutScale,
			UnseenNodeDown: -1, // the nodes are registered ready without a worker (registerClusterNodes)
		}
		cfg.Gossip = gossip.DefaultConfig()
		cfg.Gossip.BindAddr, cfg.Gossip.BindPort = "127.0.0.1", 0
		s, err := agent.NewServer(cfg, agent.Deps{})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start server %d: %w", i+1, err), c.close())
		}
		if err := s.Start(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("start server %d: %w", i+1, err), c.close())
		}
		c.servers = append(c.servers, s)
		join = append(join, s.Gossip().LocalAddr())
	}
	if _, err := c.waitLeader(ctx, 30*time.Second); err != nil {
		return nil, errors.Join(err, c.close())
	}
	return c, nil
}

// waitLeader returns the leader once it has caught up and serves reads.
func (c *benchCluster) waitLeader(ctx context.Context, within time.Duration) (*agent.Server, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, s := range c.servers {
			if !s.Store().IsLeader() {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			err := s.Store().ReadBarrier(rctx, raftstore.ReadDefault)
			cancel()
			if err == nil {
				return s, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waiting for a leader: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("no leader within %v", within)
}

// close stops every server and removes their data.
func (c *benchCluster) close() error {
	var errs []error
	for _, s := range c.servers {
		if err := s.Kill(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.HTTPAddr(), err))
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove cluster data: %w", err))
	}
	return errors.Join(errs...)
}

// clusterApplyAll applies commands on the leader from 64 goroutines, so that they
// share Raft batches; the first failure is returned.
func clusterApplyAll[T any](ctx context.Context, leader *agent.Server, typ fsm.MessageType, reqs []*T) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 64)
	for _, req := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := leader.Store().Apply(ctx, typ, req)
			if err == nil && res.Err != nil {
				err = res.Err
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%s: %w", typ, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// clusterHTTP is a client transport that keeps a connection per worker.
func clusterHTTP(conc int) *http.Client {
	tr := &http.Transport{
		MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}
