package raftstore

import "errors"

// Sentinel errors the store returns (wrapped), mirroring hashicorp/raft's
// distinction between a command that was definitely not queued and one
// whose fate is unknown (PITFALLS raft). Callers test them with errors.Is.
var (
	// ErrNotLeader: this server is not the leader; nothing was applied.
	// The HTTP API forwards the request to the leader once more.
	ErrNotLeader = errors.New("not the leader")
	// ErrNoLeader: no leader is known, or it has not caught up yet;
	// nothing was applied.
	ErrNoLeader = errors.New("no leader")
	// ErrOutcomeUnknown: the command may or may not commit (leadership
	// lost after it was queued, a timeout). Never report it as a failure.
	ErrOutcomeUnknown = errors.New("outcome unknown")
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

// Info is this server's view of Raft.
type Info struct {
	State             string // "leader", "follower", "candidate", "shutdown"
	Term              uint64
	LastIndex         uint64
	CommitIndex       uint64
	AppliedIndex      uint64
	LastSnapshotIndex uint64
	ConfigIndex       uint64
	Servers           []Peer
	// LogStore is the log store this server keeps (wal or bolt); empty in
	// memory. Operators moving servers to the WAL one at a time read it.
	LogStore LogStore
}
