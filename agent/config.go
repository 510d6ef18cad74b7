// Package agent wires a server and runs it: configuration in, the parts
// built (Raft store, FSM, gossip, HTTP API, leader duties, elastic
// provisioning, metrics) and started, and a graceful or abrupt stop. It also
// starts the embedded dev cluster. It decides nothing itself: consensus is
// raftstore's, the control loops are leader's, the worker runtime is
// worker's.
package agent

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/elastic"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/scheduler"
)

// Default ports (DESIGN §1).
const (
	DefaultHTTPPort   = 7070
	DefaultRaftPort   = 7071
	DefaultGossipPort = 7072
)

// Config is an operator's configuration of one server.
type Config struct {
	NodeID  string
	DataDir string // empty: in-memory raft stores (dev without --data-dir)
	// RaftLogStore picks DataDir's Raft log store (raftstore.LogStoreAuto
	// when empty).
	RaftLogStore raftstore.LogStore
	// Recover starts although DataDir lost its stored Raft term and vote
	// (raftstore.CheckDataDir); only an operator's explicit choice.
	Recover bool

	HTTPAddr       string // listen address of the HTTP API
	HTTPAdvertise  string // address other servers and workers use; defaults to HTTPAddr
	RaftAddr       string // listen address of the Raft transport
	RaftAdvertise  string
	GossipBindAddr string
	GossipBindPort int
	GossipAdvert   string
	Join           []string

	// BootstrapExpect, when > 0, bootstraps Raft once gossip shows that many
	// servers. Bootstrap forces a single-server bootstrap (dev mode), or
	// one with Deps.Peers.
	BootstrapExpect int
	Bootstrap       bool

	// TimeoutScale multiplies every Raft timeout (1 = LAN defaults).
	TimeoutScale float64
	// DeadServerCleanup is how long gossip must report a server dead before
	// the leader removes it from Raft.
	DeadServerCleanup time.Duration
	// DeleteTimeout bounds the stop-then-delete saga (DESIGN §4).
	DeleteTimeout time.Duration
	// UnseenNodeDown is how long a new leader waits for gossip to see a
	// node an earlier leader saw before writing it down (leader's one
	// minute when zero; negative: never, for nodes that have no worker).
	UnseenNodeDown time.Duration
	// RolloutSettle is how long a replica a service rollout relaunched
	// must run before the rollout counts it available (leader's 5 s when
	// zero).
	RolloutSettle time.Duration
	// EventKeepAlive spaces the keep-alive lines of idle /v1/events
	// streams (httpapi's 15 s when zero).
	EventKeepAlive time.Duration
	// MaxExpensive and MaxExpensivePerCaller bound the expensive API
	// requests (lists, event replays, plans) the server works on at once,
	// in all and per token or client address (httpapi's defaults when 0).
	MaxExpensive          int
	MaxExpensivePerCaller int
	// WriteLatencyFactor makes expensive requests yield to writes (see
	// httpapi.Config; httpapi's default when 0, off when negative).
	WriteLatencyFactor float64
	// QuorumSize is the voter count dead-server cleanup never goes below;
	// defaults to BootstrapExpect (or 1).
	QuorumSize int

	SnapshotThreshold uint64
	TrailingLogs      uint64

	// Elastic tunes elastic pools' provisioning.
	Elastic ElasticConfig

	Gossip gossip.Config
	// ACL turns on ACL enforcement and lists the tokens from configuration.
	ACL ACLConfig
	// TLS, when it names a certificate, makes the HTTP API HTTPS-only, the
	// Raft transport mutual TLS, and forwarding to the leader HTTPS.
	TLS    certs.Files
	Logger *slog.Logger
	Clock  Clock
}

// ElasticConfig tunes elastic pools (DESIGN §2.2): planning on the leader
// and the calls to provisioners.
type ElasticConfig struct {
	// MaxProvisionedNodes caps provisioned nodes across every elastic pool,
	// spawning ones included; 0 means no cap.
	MaxProvisionedNodes int
	// AllowExec lets this server run pools' command provisioners. Off by
	// default: a write token can set any pool's command.
	AllowExec bool
	// AllowHosts are the webhook hosts provisioners may be called at
	// (--provisioner-allow); none by default (elastic.Policy).
	AllowHosts []string
	// CallTimeout bounds one provisioner call (default 2 m).
	CallTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between failed calls.
	RetryMin, RetryMax time.Duration
	// Interval is how often the leader looks at elastic pools without a
	// state change (default 1 s).
	Interval time.Duration
	// DeleteGrace is how long after a successful delete call the leader
	// waits for the node to leave gossip (default 30 s).
	DeleteGrace time.Duration
}

func (e ElasticConfig) calls() elastic.Config {
	return elastic.Config{Policy: e.policy(), CallTimeout: e.CallTimeout, RetryMin: e.RetryMin, RetryMax: e.RetryMax}
}

func (e ElasticConfig) policy() elastic.Policy {
	return elastic.Policy{AllowExec: e.AllowExec, AllowHosts: e.AllowHosts}
}

// Deps are what an embedder (tests, the simulation, benchmarks) plugs in
// instead of what the server would build from Config.
type Deps struct {
	// Engine is the placement engine; nil makes a default one. Every server
	// must validate expressions the same way, so the FSM always uses it.
	Engine *scheduler.Engine
	// HTTPListener is an already-open listener for the API.
	HTTPListener net.Listener
	// HTTPClient carries this server's calls to other servers' APIs
	// (forwarding to the leader) instead of a TCP client built from TLS.
	HTTPClient *http.Client
	// Transport replaces the TCP transport (raft's in-memory one).
	Transport raft.Transport
	// MemStores, when DataDir is empty, are in-memory Raft stores that
	// outlive the server, so an in-process crash can restart from them.
	MemStores *raftstore.MemStores
	// NoGossip runs without gossip: tests that only exercise Raft.
	NoGossip bool
	// Peers bootstraps Raft with exactly these servers (id → Raft address)
	// instead of waiting for gossip, and PeerHTTP names their HTTP
	// addresses where gossip cannot.
	Peers    map[string]string
	PeerHTTP map[string]string
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
	// Every peer would refuse it on Raft (and forwarding): refuse it here,
	// in one sentence, rather than run a server that never joins.
	if err := tc.CheckServes(); err != nil {
		return nil, fmt.Errorf("agent: --tls-cert %s is not a server certificate of the CA (make one with amserver tls cert create --server): %w",
			c.TLS.CertFile, err)
	}
	return tc, nil
}

// Clock is where the leader reads time; tests inject offsets through it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }
