package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// catchupCluster is benchCluster's 3 servers (TCP Raft on loopback, WAL
// on disk, fsync on, gossip bootstrap) on fixed loopback ports, so that a
// server can be stopped and started again on its data directory at the
// Raft and gossip addresses its peers know.
type catchupCluster struct {
	benchCluster
	cfgs   []agent.Config
	events *catchupEvents
	leader atomic.Pointer[agent.Server] // the one creates go to
}

func startCatchupCluster(ctx context.Context, parent string, logger *slog.Logger) (*catchupCluster, error) {
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "catchup-")
	if err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	c := &catchupCluster{benchCluster: benchCluster{dir: dir}, events: &catchupEvents{}}
	var join []string
	for i := range 3 {
		raftPort, err := freeLoopbackPort(false)
		if err != nil {
			return nil, errors.Join(err, c.close())
		}
		gossipPort, err := freeLoopbackPort(true)
		if err != nil {
			return nil, errors.Join(err, c.close())
		}
		id := fmt.Sprintf("s%d", i+1)
		cfg := agent.Config{
			NodeID: id, DataDir: filepath.Join(dir, id),
			HTTPAddr: "127.0.0.1:0", RaftAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(raftPort)),
			BootstrapExpect: 3, Join: join, TimeoutScale: clusterTimeoutScale,
			Logger: slog.New(c.events.handler(id, logger.Handler())),
		}
		cfg.Gossip = gossip.DefaultConfig()
		cfg.Gossip.BindAddr, cfg.Gossip.BindPort = "127.0.0.1", gossipPort
		c.cfgs = append(c.cfgs, cfg)
		c.servers = append(c.servers, nil)
		if err := c.start(ctx, i); err != nil {
			return nil, errors.Join(err, c.close())
		}
		join = append(join, c.servers[i].Gossip().LocalAddr())
	}
	if _, err := c.waitLeader(ctx, 60*time.Second); err != nil {
		return nil, errors.Join(err, c.close())
	}
	return c, nil
}

// start creates and starts server i from its configuration, on its data
// directory as it is.
func (c *catchupCluster) start(ctx context.Context, i int) error {
	s, err := agent.NewServer(c.cfgs[i], agent.Deps{})
	if err != nil {
		return fmt.Errorf("server %s: %w", c.cfgs[i].NodeID, err)
	}
	c.servers[i] = s
	if err := s.Start(ctx); err != nil {
		return fmt.Errorf("start server %s: %w", c.cfgs[i].NodeID, err)
	}
	return nil
}

// close stops the servers that run and removes the data.
func (c *catchupCluster) close() error {
	var live []*agent.Server
	for _, s := range c.servers {
		if s != nil {
			live = append(live, s)
		}
	}
	c.servers = live
	return c.benchCluster.close()
}

// freeLoopbackPort is a loopback TCP port free right now (and its UDP
// twin, for gossip, when udp is set).
func freeLoopbackPort(udp bool) (int, error) {
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if !udp {
			return port, ln.Close()
		}
		pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		cerr := ln.Close()
		if err == nil {
			return port, errors.Join(cerr, pc.Close())
		}
	}
	return 0, errors.New("free port: no TCP port with a free UDP twin in 20 tries")
}

// create creates bundles [from, to) of the state suite's shape
// through Raft on the leader from 64 goroutines (the cluster suite's client
// count), so that they share Raft batches; the leader's placer places them.
// A create that meets a leader change is sent again to the next leader
// (the same spec twice is one bundle).
func (c *catchupCluster) create(ctx context.Context, from, to int) error {
	var next atomic.Int64
	next.Store(int64(from) - 1)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range clusterConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i < to && ctx.Err() == nil; i = int(next.Add(1)) {
				if err := c.createOne(ctx, i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return fmt.Errorf("creating bundles: %w", ctx.Err())
	}
	return first
}

func (c *catchupCluster) createOne(ctx context.Context, i int) error {
	spec := stateSpec(i)
	spec.Pool = clusterPool
	var err error
	for range 5 {
		leader := c.leader.Load()
		if leader == nil || !leader.Store().IsLeader() {
			if leader, err = c.waitLeader(ctx, 60*time.Second); err != nil {
				break
			}
			c.leader.Store(leader)
		}
		var res *fsm.Result
		res, err = leader.Store().Apply(ctx, fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec, Now: time.Now().UnixNano()})
		if err == nil {
			err = res.Err
			break
		}
		if !errors.Is(err, raftstore.ErrNotLeader) && !errors.Is(err, raftstore.ErrNoLeader) && !errors.Is(err, raftstore.ErrOutcomeUnknown) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("create bundle %d: %w", i, err)
	}
	return nil
}
