// Package agent is amserver's server runtime: Raft setup, gossip wiring,
// leadership and leader duties, and the dev cluster that runs servers and
// workers (package worker) in one process.
package agent

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/certs"
)

// Default ports (DESIGN §1).
const (
	DefaultHTTPPort   = 7070
	DefaultRaftPort   = 7071
	DefaultGossipPort = 7072
)

// Config configures one server.
type Config struct {
	NodeID  string
	DataDir string // empty: in-memory raft stores (tests, dev without --data-dir)

	HTTPAddr       string       // listen address of the HTTP API
	HTTPListener   net.Listener // optional: an already-open listener (tests)
	HTTPAdvertise  string       // address other servers and workers use; defaults to HTTPAddr
	RaftAddr       string       // listen address of the Raft transport
	RaftAdvertise  string
	GossipBindAddr string
	GossipBindPort int
	GossipAdvert   string
	Join           []string

	// BootstrapExpect, when > 0, bootstraps Raft once gossip shows that many
	// servers. Bootstrap forces a single-server bootstrap (dev mode).
	BootstrapExpect int
	Bootstrap       bool

	// TimeoutScale multiplies every Raft timeout (1 = LAN defaults).
	TimeoutScale float64
	// DeadServerCleanup is how long gossip must report a server dead before
	// the leader removes it from Raft.
	DeadServerCleanup time.Duration
	// DeleteTimeout bounds the stop-then-delete saga (DESIGN §4).
	DeleteTimeout time.Duration
	// EventKeepAlive spaces the keep-alive lines of idle /v1/events
	// streams (httpapi's 15 s when zero).
	EventKeepAlive time.Duration
	// QuorumSize is the voter count dead-server cleanup never goes below;
	// defaults to BootstrapExpect (or 1).
	QuorumSize int

	SnapshotThreshold uint64
	TrailingLogs      uint64

	// Elastic tunes elastic pools' provisioning (elastic.go).
	Elastic ElasticConfig

	Gossip gossip.Config
	// ACL turns on ACL enforcement and lists the tokens from configuration.
	ACL ACLConfig
	// TLS, when it names a certificate, makes the HTTP API HTTPS-only, the
	// Raft transport mutual TLS, and forwarding to the leader HTTPS.
	TLS    certs.Files
	Logger *slog.Logger
	Clock  Clock

	// Transport replaces the TCP transport (tests use raft's in-memory one).
	Transport raft.Transport
	// HTTPClient, when set, carries this server's calls to other servers'
	// APIs (forwarding to the leader) instead of a TCP client built from
	// TLS; the in-process simulation routes them over an in-memory network.
	HTTPClient *http.Client
	// MemStores, when DataDir is empty, are in-memory Raft stores that
	// outlive the server, so an in-process crash can restart from them.
	MemStores *MemStores
	// NoGossip runs without gossip: tests that only exercise Raft.
	NoGossip bool
	// PeerHTTP maps server ids to HTTP addresses where gossip cannot (NoGossip).
	PeerHTTP map[string]string
	// Peers bootstraps Raft with exactly these servers (id → raft address)
	// instead of waiting for gossip; used by in-process tests.
	Peers map[string]string
}

func (c *Config) setDefaults() error {
	if c.NodeID == "" {
		return fmt.Errorf("agent: a node id is required")
	}
	if err := c.ACL.validate(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.TimeoutScale <= 0 {
		c.TimeoutScale = 1
	}
	if c.DeadServerCleanup == 0 {
		c.DeadServerCleanup = 5 * time.Minute
	}
	if c.DeleteTimeout == 0 {
		c.DeleteTimeout = 60 * time.Second
	}
	if c.QuorumSize == 0 {
		c.QuorumSize = max(c.BootstrapExpect, 1)
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
	c.Elastic.setDefaults()
	return nil
}

// loadTLS loads the server's certificates; nil when TLS is off.
func (c *Config) loadTLS() (*certs.TLS, error) {
	if !c.TLS.Enabled() {
		return nil, nil
	}
	tc, err := certs.LoadServer(c.TLS)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return tc, nil
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

// Clock is where the leader reads time; tests inject offsets through it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }
