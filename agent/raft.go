package agent

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/amserver/amserver/internal/certs"
)

// raftConfig tunes Raft for a LAN: ~500 ms heartbeat and election, lease
// below heartbeat (a hashicorp/raft requirement), all scaled together.
func raftConfig(c *Config, notify chan bool) *raft.Config {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * c.TimeoutScale) }
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = scale(500 * time.Millisecond)
	rc.ElectionTimeout = scale(500 * time.Millisecond)
	rc.LeaderLeaseTimeout = scale(250 * time.Millisecond)
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

// raftStores are the log, stable and snapshot stores plus what must be
// closed with them.
type raftStores struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	close  func() error
}

func openStores(c *Config) (*raftStores, error) {
	if c.DataDir == "" {
		mem := c.MemStores
		if mem == nil {
			mem = NewMemStores()
		}
		return &raftStores{logs: mem.Logs, stable: mem.Logs, snaps: mem.Snapshots, close: func() error { return nil }}, nil
	}
	dir := filepath.Join(c.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create raft dir: %w", err)
	}
	// The map freelist and unsynced freelist keep bbolt fast after the large
	// truncations that follow snapshots (PITFALLS: raft-boltdb).
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{
			Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("open raft log store: %w", err)
	}
	cache, err := raft.NewLogCache(1024, bolt)
	if err != nil {
		_ = bolt.Close()
		return nil, fmt.Errorf("raft log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 3, newHclogBridge(c.Logger, "raft-snapshot", hclog.Info))
	if err != nil {
		_ = bolt.Close()
		return nil, fmt.Errorf("raft snapshot store: %w", err)
	}
	return &raftStores{logs: cache, stable: bolt, snaps: snaps, close: bolt.Close}, nil
}

// newTransport opens the Raft transport: the configured one (tests), mutual
// TLS when tc is set, else plain TCP. The stream layer is returned with TLS
// so that the leader can probe a new peer's certificate.
func newTransport(c *Config, tc *certs.TLS) (raft.Transport, *tlsStreamLayer, error) {
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
	if tc != nil {
		return newTLSTransport(c, adv, tc)
	}
	t, err := raft.NewTCPTransportWithLogger(c.RaftAddr, adv, 3, 10*time.Second,
		newHclogBridge(c.Logger, "raft-net", hclog.Warn))
	if err != nil {
		return nil, nil, fmt.Errorf("raft transport on %s: %w", c.RaftAddr, err)
	}
	return t, nil, nil
}
