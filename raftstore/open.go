package raftstore

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/certs"
)

// Config configures one server's Raft.
type Config struct {
	NodeID  string
	DataDir string // empty: in-memory stores (MemStores, or fresh ones)

	RaftAddr      string // listen address of the TCP transport
	RaftAdvertise string // address peers use; defaults to RaftAddr
	// TimeoutScale multiplies every Raft timeout (1 = LAN defaults).
	TimeoutScale float64

	SnapshotThreshold uint64
	TrailingLogs      uint64

	// TLS, when set, makes the transport mutual TLS.
	TLS *certs.TLS
	// Transport replaces the TCP transport (tests use raft's in-memory one).
	Transport raft.Transport
	// MemStores, when DataDir is empty, are in-memory stores that outlive
	// the server, so an in-process crash can restart from them.
	MemStores *MemStores
	// LogStore picks the on-disk log store (LogStoreAuto when empty).
	LogStore LogStore
	// Recover accepts a data directory whose stored term and vote are lost
	// (an empty log store next to snapshots); see CheckDataDir.
	Recover bool
	// walSegmentSize overrides raft-wal's 64 MiB segments when positive:
	// tests shrink them to cross segment boundaries in a few entries.
	walSegmentSize int

	// HTTPAddrOf names a server's HTTP address (from gossip), for
	// LeaderInfo; nil leaves it empty.
	HTTPAddrOf func(id string) string
	// OnCommit, when set, sees the state and index of every command this
	// leader committed without error (metrics count its events).
	OnCommit func(st *fsm.State, index uint64)
	Logger   *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.TimeoutScale <= 0 {
		c.TimeoutScale = 1
	}
	if c.RaftAdvertise == "" {
		c.RaftAdvertise = c.RaftAddr
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.LogStore == "" {
		c.LogStore = LogStoreAuto
	}
	if c.HTTPAddrOf == nil {
		c.HTTPAddrOf = func(string) string { return "" }
	}
}

// RaftConfig tunes Raft for a LAN: 250 ms heartbeat and election timeouts,
// the lease at the heartbeat timeout (hashicorp/raft allows no more: a
// loaded leader should not step down over late acks), all scaled together.
// A follower checks for contact every random 1×–2× HeartbeatTimeout and
// votes for no one while it still hears from a leader, so after a leader
// dies both survivors time out within 3× (750 ms) and then win a vote
// round (issue 21: first acknowledged write p99 <= 1 s; measured p99
// 0.79 s, and 1.6 s with the former 500 ms). The leader sends heartbeats
// every HeartbeatTimeout/10 (25 ms) from goroutines of their own. 200 ms
// was faster still (p99 0.63 s) but called 3 elections in a minute of
// make soak-smoke where 250 ms called none (docs/performance.md). Where
// hosts stall longer, --timeout-scale stretches all three.
// Benchmarks use it to run a bare Raft cluster on equal terms with amserver.
func RaftConfig(c Config, notify chan bool) *raft.Config {
	c.setDefaults()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * c.TimeoutScale) }
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = scale(HeartbeatTimeout)
	rc.ElectionTimeout = scale(HeartbeatTimeout)
	rc.LeaderLeaseTimeout = scale(HeartbeatTimeout) // the most raft allows: a loaded leader keeps its lease
	rc.CommitTimeout = 20 * time.Millisecond
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 256
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.TrailingLogs = c.TrailingLogs
	rc.SnapshotInterval = 30 * time.Second
	rc.NotifyCh = notify
	rc.Logger = newHclogBridge(c.Logger, "raft", hclog.Info)
	return rc
}

// HeartbeatTimeout is Raft's heartbeat and election timeout at
// TimeoutScale 1.
const HeartbeatTimeout = 250 * time.Millisecond

// Stores are the log, stable and snapshot stores plus what must be closed
// with them.
type Stores struct {
	Logs   raft.LogStore
	Stable raft.StableStore
	Snaps  raft.SnapshotStore
	Close  func() error
	// Kind is the log store opened; empty for memory.
	Kind LogStore
}

// MemStores are Raft's log, stable and snapshot stores kept in memory.
type MemStores struct {
	Logs      *raft.InmemStore
	Snapshots *raft.InmemSnapshotStore
}

// NewMemStores returns empty in-memory stores.
func NewMemStores() *MemStores {
	return &MemStores{Logs: raft.NewInmemStore(), Snapshots: raft.NewInmemSnapshotStore()}
}

// OpenStores opens the stores of c: the log store (logstore.go) with a
// log cache and file snapshots under DataDir/raft, or memory without a
// DataDir.
func OpenStores(c Config) (*Stores, error) {
	c.setDefaults()
	if c.DataDir == "" {
		mem := c.MemStores
		if mem == nil {
			mem = NewMemStores()
		}
		return &Stores{Logs: mem.Logs, Stable: mem.Logs, Snaps: mem.Snapshots, Close: func() error { return nil }}, nil
	}
	if err := CheckDataDir(c.DataDir, c.Recover); err != nil {
		return nil, err
	}
	// Token hashes and gossip keys live in these files: owner only.
	dir := filepath.Join(c.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create raft dir: %w", err)
	}

	kind, err := chooseLogStore(c.LogStore, dir, c.DataDir)
	if err != nil {
		return nil, err
	}
	logs, stable, closeLogs, err := openLogStore(kind, dir, c.walSegmentSize, c.Logger)
	if err != nil {
		return nil, err
	}
	// Operators moving servers to the WAL one at a time read it here.
	c.Logger.Info("raft log store opened", "log_store", string(kind), "dir", dir)
	cache, err := raft.NewLogCache(1024, logs)
	if err != nil {
		_ = closeLogs()
		return nil, fmt.Errorf("raft log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 3, newHclogBridge(c.Logger, "raft-snapshot", hclog.Info))
	if err != nil {
		_ = closeLogs()
		return nil, fmt.Errorf("raft snapshot store: %w", err)
	}
	if err := privateTree(c.DataDir); err != nil {
		_ = closeLogs()
		return nil, err
	}
	private := privateSnapshots{FileSnapshotStore: snaps, path: filepath.Join(dir, "snapshots")}
	return &Stores{Logs: cache, Stable: stable, Snaps: private, Close: closeLogs, Kind: kind}, nil
}

// NewTransport opens the Raft transport of c: the configured one (tests),
// mutual TLS when c.TLS is set, else plain TCP.
func NewTransport(c Config) (raft.Transport, error) {
	t, _, err := newTransport(c)
	return t, err
}

// newTransport is NewTransport that also returns the TLS stream layer, so
// that the leader can probe a new peer's certificate.
func newTransport(c Config) (raft.Transport, *tlsStreamLayer, error) {
	c.setDefaults()
	if c.Transport != nil {
		return c.Transport, nil, nil
	}
	var adv net.Addr // nil: advertise the bound address (port 0 in dev and tests)
	if c.RaftAdvertise != "" && c.RaftAdvertise != c.RaftAddr {
		tcp, err := net.ResolveTCPAddr("tcp", c.RaftAdvertise)
		if err != nil {
			return nil, nil, fmt.Errorf("raft advertise address %q: %w", c.RaftAdvertise, err)
		}
		adv = tcp
	}
	if c.TLS != nil {
		return newTLSTransport(&c, adv, c.TLS)
	}
	t, err := raft.NewTCPTransportWithLogger(c.RaftAddr, adv, 3, 10*time.Second,
		newHclogBridge(c.Logger, "raft-net", hclog.Warn))
	if err != nil {
		return nil, nil, fmt.Errorf("raft transport on %s: %w", c.RaftAddr, err)
	}
	return t, nil, nil
}
