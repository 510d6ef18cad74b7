// Package httpapi is amserver's HTTP API (DESIGN §7) on echo/v4: routes,
// handlers, strict input decoding, leader forwarding, read consistency and
// blocking queries. It talks to the server runtime only through Backend,
// which it declares here; the agent implements it.
package httpapi

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// Sentinel errors a Backend returns (wrapped) so the API can answer with the
// right status. They mirror hashicorp/raft's distinction between a command
// that was definitely not queued and one whose fate is unknown.
var (
	// ErrNotLeader: this server is not the leader; nothing was applied. The
	// API forwards the request to the leader once more.
	ErrNotLeader = errors.New("not the leader")
	// ErrNoLeader: no leader is known; nothing was applied (503 noLeader).
	ErrNoLeader = errors.New("no leader")
	// ErrOutcomeUnknown: the command may or may not commit (leadership lost
	// after it was queued, a timeout). 503 outcomeUnknown, never a failure.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrNotImplemented: the feature is not wired in this server (501).
	ErrNotImplemented = errors.New("not implemented")
)

// ReadMode is the consistency a read asks for (DESIGN §5).
type ReadMode int

const (
	// ReadDefault: verify leadership and wait until the FSM has applied
	// everything committed before the read arrived (a barrier in this term).
	ReadDefault ReadMode = iota
	// ReadConsistent: run a fresh Raft barrier, then verify leadership.
	ReadConsistent
)

// LeaderInfo names the known leader.
type LeaderInfo struct {
	ID       string
	RaftAddr string
	// HTTPAddr is the leader's API address: "host:port" or a URL.
	HTTPAddr string
}

// Peer is one server of the Raft configuration.
type Peer struct {
	ID       string
	Address  string
	Suffrage string // "voter", "nonvoter", "staging"
	Leader   bool
}

// RaftInfo is this server's view of Raft.
type RaftInfo struct {
	State             string // "leader", "follower", "candidate", "shutdown"
	Term              uint64
	LastIndex         uint64
	CommitIndex       uint64
	AppliedIndex      uint64
	LastSnapshotIndex uint64
	ConfigIndex       uint64
	Servers           []Peer
}

// Store is the local replicated state.
type Store interface {
	// State is a consistent read view of the local FSM.
	State() *fsm.State
	// WatchCh is closed at the next FSM change (or restore).
	WatchCh() <-chan struct{}
}

// Consensus is the Raft side of the server.
type Consensus interface {
	// ServerID is this server's Raft id; it marks forwarded requests.
	ServerID() string
	// Apply commits one command; only the leader can. Errors wrap
	// ErrNotLeader or ErrNoLeader (not queued) or ErrOutcomeUnknown.
	Apply(ctx context.Context, t fsm.MessageType, body any) (*fsm.Result, error)
	IsLeader() bool
	// Leader returns the known leader; false when none is known.
	Leader() (LeaderInfo, bool)
	// ReadBarrier prepares a linearizable read on the leader; ErrNotLeader
	// when this server is not (or no longer) the leader.
	ReadBarrier(ctx context.Context, mode ReadMode) error
	// LastContact is the time since this server last heard from the leader
	// (0 on the leader).
	LastContact() time.Duration
	// Now is the leader's clock, stamped into commands.
	Now() time.Time
}

// Operator holds the operator endpoints' needs.
type Operator interface {
	RaftInfo(ctx context.Context) (RaftInfo, error)
	// TransferLeadership hands leadership to server id ("" lets Raft pick).
	TransferLeadership(ctx context.Context, id string) error
	// RemovePeer removes server id from the Raft configuration; an unknown
	// id wraps fsm.ErrNotFound.
	RemovePeer(ctx context.Context, id string) error
	// SaveSnapshot writes a snapshot of the whole state to w.
	SaveSnapshot(ctx context.Context, w io.Writer) error
	// RestoreSnapshot replaces the whole state; undecodable input wraps
	// fsm.ErrInvalid.
	RestoreSnapshot(ctx context.Context, r io.Reader) error
}

// Membership is the local gossip view.
type Membership interface {
	Members() []gossip.Member
}

// Planner runs placement as a dry run.
type Planner interface {
	// Plan returns the bundle as it would be placed and the explanation;
	// ErrNotImplemented until a scheduler is wired.
	Plan(ctx context.Context, spec fsm.BundleSpec) (*fsm.Bundle, *fsm.Explain, error)
}

// Backend is everything the HTTP API needs from the server runtime.
type Backend interface {
	Store
	Consensus
	Operator
	Membership
	Planner
}
