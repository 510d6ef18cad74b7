package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/raftstore"
)

func rawRaftWriteSystem(store raftstore.LogStore) writeSystem {
	return writeSystem{
		name: "raw-raft", verb: "applies/s",
		note: "hashicorp/raft with amserver's own settings and stores (raftstore.RaftConfig/OpenStores: BatchApplyCh, " +
			"MaxAppendEntries 256, LogCache 1024 over the " + string(store) + " log store, fsync on), TCP loopback, no-op FSM, Apply on the leader",
		start: func(ctx context.Context, o Options, dir string, _ int) (writeTarget, error) {
			return startRawRaft(ctx, o, dir, store)
		},
	}
}

// rawRaft is three bare Raft nodes: the limit of amserver's own stack, with
// no HTTP, no validation, no FSM work and no forwarding.
type rawRaft struct {
	nodes   []*raft.Raft
	closers []func() error
	leader  atomic.Pointer[raft.Raft]
}

func startRawRaft(ctx context.Context, o Options, dir string, store raftstore.LogStore) (*rawRaft, error) {
	logger := slog.New(writeLevelHandler{Handler: o.Logger.Handler(), min: slog.LevelWarn})
	r := &rawRaft{}
	var servers []raft.Server
	var cfgs []raftstore.Config
	var transports []raft.Transport
	for i := range 3 {
		cfg := raftstore.Config{
			NodeID: fmt.Sprintf("r%d", i+1), DataDir: filepath.Join(dir, fmt.Sprint(i+1)),
			RaftAddr: "127.0.0.1:0", Logger: logger, LogStore: store,
		}
		t, err := raftstore.NewTransport(cfg)
		if err != nil {
			return nil, errors.Join(err, r.close())
		}
		r.closers = append(r.closers, transportCloser(t))
		cfgs, transports = append(cfgs, cfg), append(transports, t)
		servers = append(servers, raft.Server{ID: raft.ServerID(cfg.NodeID), Address: t.LocalAddr()})
	}
	for i, cfg := range cfgs {
		if err := r.startNode(cfg, transports[i], raft.Configuration{Servers: servers}); err != nil {
			return nil, errors.Join(err, r.close())
		}
	}
	if err := r.waitLeader(ctx); err != nil {
		return nil, errors.Join(err, r.close())
	}
	return r, nil
}

func transportCloser(t raft.Transport) func() error {
	return func() error {
		if c, ok := t.(io.Closer); ok {
			return c.Close()
		}
		return nil
	}
}

// startNode opens a node's stores as an amserver server opens them and
// bootstraps it with the full configuration (identical on every node).
func (r *rawRaft) startNode(cfg raftstore.Config, t raft.Transport, conf raft.Configuration) error {
	rc := raftstore.RaftConfig(cfg, nil)
	st, err := raftstore.OpenStores(cfg)
	if err != nil {
		return fmt.Errorf("raft stores: %w", err)
	}
	r.closers = append(r.closers, st.Close)
	if err := raft.BootstrapCluster(rc, st.Logs, st.Stable, st.Snaps, t, conf); err != nil {
		return fmt.Errorf("bootstrap %s: %w", cfg.NodeID, err)
	}
	node, err := raft.NewRaft(rc, writeNopFSM{}, st.Logs, st.Stable, st.Snaps, t)
	if err != nil {
		return fmt.Errorf("start raft %s: %w", cfg.NodeID, err)
	}
	r.nodes = append(r.nodes, node)
	return nil
}

// waitLeader waits for a leader and a committed barrier in its term.
func (r *rawRaft) waitLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		for _, n := range r.nodes {
			if n.State() == raft.Leader && n.Barrier(5*time.Second).Error() == nil {
				r.leader.Store(n)
				return nil
			}
		}
		writeSleep(ctx, 50*time.Millisecond)
	}
	return fmt.Errorf("raw raft: no leader within 30s: %w", ctx.Err())
}

func (r *rawRaft) prepare(int) error { return nil }

// write applies payload bytes on the leader; a bare Raft cluster has no
// forwarding, so every writer talks to the leader directly. After a
// leader change it does what amserver's client does with noLeader: waits
// briefly and sends to the new leader. A write whose leader was lost
// while it was in flight may or may not commit, so it fails, as
// amserver's outcome-unknown answer does, and the next goes to the new one.
func (r *rawRaft) write(ctx context.Context, _ int, seq int64) error {
	for {
		err := r.leader.Load().Apply(writeSpecJSON(seq), 10*time.Second).Error()
		if err == nil {
			return nil
		}
		lost := errors.Is(err, raft.ErrLeadershipLost)
		if (!lost && !errors.Is(err, raft.ErrNotLeader)) || ctx.Err() != nil {
			return fmt.Errorf("raft apply: %w", err)
		}
		writeSleep(ctx, 25*time.Millisecond)
		for _, n := range r.nodes {
			if n.State() == raft.Leader {
				r.leader.Store(n)
			}
		}
		if lost {
			return fmt.Errorf("raft apply: %w", err)
		}
	}
}

func (r *rawRaft) close() error {
	var errs []error
	for _, n := range r.nodes {
		if err := n.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
		}
	}
	for _, c := range r.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeNopFSM applies nothing and snapshots nothing.
type writeNopFSM struct{}

func (writeNopFSM) Apply(*raft.Log) any { return nil }

func (writeNopFSM) Snapshot() (raft.FSMSnapshot, error) { return writeNopSnapshot{}, nil }

func (writeNopFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type writeNopSnapshot struct{}

func (writeNopSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }

func (writeNopSnapshot) Release() {}
