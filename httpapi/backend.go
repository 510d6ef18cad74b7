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

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// ErrNotImplemented: the feature is not wired in this server (501). The
// consensus errors a Backend returns (wrapped) are raftstore's:
// ErrNotLeader (forward once more), ErrNoLeader and ErrOutcomeUnknown (503).
var ErrNotImplemented = errors.New("not implemented")

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
	Leader() (raftstore.LeaderInfo, bool)
	// ReadBarrier prepares a linearizable read on the leader; ErrNotLeader
	// when this server is not (or no longer) the leader.
	ReadBarrier(ctx context.Context, mode raftstore.ReadMode) error
	// LastContact is the time since this server last heard from the leader
	// (0 on the leader).
	LastContact() time.Duration
	// Now is the leader's clock, stamped into commands.
	Now() time.Time
	// ServersApply reports whether every server of the Raft configuration
	// applies replicated commands of level (fsm.CommandLevel): a handler
	// sets a level's command fields only then.
	ServersApply(level int) bool
}

// Operator holds the operator endpoints' needs.
type Operator interface {
	RaftInfo(ctx context.Context) (raftstore.Info, error)
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
	Member(name string) (gossip.Member, bool)
}

// Planner runs placement as a dry run.
type Planner interface {
	// Plan returns the bundle as it would be placed, the explanation and
	// what a preemption would evict; ErrNotImplemented until a scheduler
	// is wired.
	Plan(ctx context.Context, spec fsm.BundleSpec) (PlanResult, error)
}

// PlanResult is a dry run's answer.
type PlanResult struct {
	Bundle    *fsm.Bundle
	Explain   *fsm.Explain
	Evictions []api.PlanEviction
}

// Backend is everything the HTTP API needs from the server runtime.
type Backend interface {
	Store
	Consensus
	Operator
	Membership
	Planner
}
