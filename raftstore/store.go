// Package raftstore owns consensus: Raft with its bolt (or in-memory)
// stores and its transport (mutual TLS included), and the thin store on top
// of it that encodes commands, applies them, classifies apply errors into
// definite and unknown outcomes (ErrNotLeader, ErrNoLeader,
// ErrOutcomeUnknown), forwards nothing itself but tells callers who leads,
// serves linearizable read barriers, changes the voter set and runs the
// leader's terms. Everything above it (leader duties, the HTTP API) reaches
// Raft only through this package.
package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/plant"
)

// defaultApplyTimeout bounds an apply whose context has no deadline.
const defaultApplyTimeout = 10 * time.Second

// Store wraps Raft thinly.
type Store struct {
	cfg       Config
	log       *slog.Logger
	raft      *raft.Raft
	fsm       *fsm.FSM
	stores    *Stores
	transport raft.Transport
	stream    *tlsStreamLayer // nil: plain TCP or a test transport
	notifyCh  chan bool
	hadState  bool // Raft state existed on disk when the store opened

	// ready is true once this server, as leader, has applied a barrier in its
	// current term: before that its FSM may lag what earlier leaders committed.
	ready   atomic.Bool
	readyMu sync.Mutex
	readyCh chan struct{} // closed when ready becomes true

	stopping  chan struct{} // closed when the server starts to stop
	closeOnce sync.Once

	probeMu     sync.Mutex
	probeFailed map[string]time.Time // raft address → last failed certificate probe
}

// Open opens the stores and the transport and starts Raft over f.
func Open(cfg Config, f *fsm.FSM) (*Store, error) {
	cfg.setDefaults()
	stores, err := OpenStores(cfg)
	if err != nil {
		return nil, err
	}
	transport, stream, err := newTransport(cfg)
	if err != nil {
		_ = stores.Close()
		return nil, err
	}
	s := &Store{
		cfg: cfg, log: cfg.Logger, fsm: f, stores: stores, transport: transport, stream: stream,
		notifyCh: make(chan bool, 32), readyCh: make(chan struct{}), stopping: make(chan struct{}),
	}
	s.hadState, err = raft.HasExistingState(stores.Logs, stores.Stable, stores.Snaps)
	if err != nil {
		s.closeStores()
		return nil, fmt.Errorf("inspect raft state: %w", err)
	}
	s.raft, err = raft.NewRaft(RaftConfig(cfg, s.notifyCh), f, stores.Logs, stores.Stable, stores.Snaps, transport)
	if err != nil {
		s.closeStores()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	return s, nil
}

// Stop releases every request waiting on Raft: the HTTP server's graceful
// shutdown would otherwise wait its whole grace period for them.
func (s *Store) Stop() { s.closeOnce.Do(func() { close(s.stopping) }) }

// Shutdown stops Raft; Close then releases the transport and the stores,
// once nothing reads them any more.
func (s *Store) Shutdown() error {
	s.Stop()
	return s.raft.Shutdown().Error()
}

// Close closes the transport and the stores (after Shutdown).
func (s *Store) Close() { s.closeStores() }

func (s *Store) closeStores() {
	if c, ok := s.transport.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	_ = s.stores.Close()
}

// Raft exposes the Raft instance for operators' tooling and tests.
func (s *Store) Raft() *raft.Raft { return s.raft }

// HadState reports whether Raft state existed when the store opened: such
// a server is a cluster member already and must never bootstrap.
func (s *Store) HadState() bool { return s.hadState }

// LocalAddr is the Raft address peers reach this server at.
func (s *Store) LocalAddr() string { return string(s.transport.LocalAddr()) }

// AppliedIndex is the index of the last entry the FSM applied.
func (s *Store) AppliedIndex() uint64 { return s.raft.AppliedIndex() }

// LastIndex is the index of the last entry in the log.
func (s *Store) LastIndex() uint64 { return s.raft.LastIndex() }

// State returns the local FSM's read view.
func (s *Store) State() *fsm.State { return s.fsm.State() }

// WatchCh returns a channel closed at the next FSM change.
func (s *Store) WatchCh() <-chan struct{} { return s.fsm.WatchCh() }

// IsLeader reports whether this server is the Raft leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the known leader, with its HTTP address from gossip.
func (s *Store) Leader() (LeaderInfo, bool) {
	addr, id := s.raft.LeaderWithID()
	if id == "" {
		return LeaderInfo{}, false
	}
	return LeaderInfo{ID: string(id), RaftAddr: string(addr), HTTPAddr: s.cfg.HTTPAddrOf(string(id))}, true
}

// LastContact is the time since this server last heard from a leader (zero
// on the leader itself).
func (s *Store) LastContact() time.Duration {
	if s.IsLeader() {
		return 0
	}
	last := s.raft.LastContact()
	if last.IsZero() {
		return -1
	}
	return time.Since(last)
}

// Apply replicates one command. A nil error means the command was applied;
// its own failure, if any, is in the result's Err.
func (s *Store) Apply(ctx context.Context, typ fsm.MessageType, body any) (*fsm.Result, error) {
	data, err := fsm.Encode(typ, body)
	if err != nil {
		return nil, err
	}
	if !s.IsLeader() {
		return nil, ErrNotLeader
	}
	timeout := defaultApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	if plant.Active(plant.EarlyAck) {
		return s.ackEarly(data, timeout), nil
	}
	f := s.raft.Apply(data, timeout)
	if err := s.wait(ctx, f); err != nil {
		return nil, classifyApplyError(err)
	}
	res, ok := f.Response().(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("apply %s: unexpected response %T", typ, f.Response())
	}
	if res.Err == nil && s.cfg.OnCommit != nil {
		s.cfg.OnCommit(s.State(), res.Index)
	}
	return res, nil
}

// ackEarly is the planted EarlyAck bug: it answers with what the command
// would do to the local state now and lets Raft commit it, or not, later.
func (s *Store) ackEarly(data []byte, timeout time.Duration) *fsm.Result {
	res := s.fsm.Preview(s.raft.LastIndex()+1, data)
	go func() { _ = s.raft.Apply(data, timeout).Error() }()
	return res
}

// errStopping ends a wait on Raft when the server stops.
var errStopping = errors.New("server is stopping")

// wait waits for a Raft future, for ctx, or for the server to stop. Raft's
// timeout bounds only the enqueue, and a future whose entry was handed to
// the FSM as Raft shut down is never answered; without this a request or a
// duty would block the shutdown forever. Giving up leaves the outcome
// unknown, which it is.
func (s *Store) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for Raft: %w", ctx.Err())
	case <-s.stopping:
		return fmt.Errorf("waiting for Raft: %w", errStopping)
	}
}

// classifyApplyError separates errors where the entry was never queued
// (definite) from those where it may still commit (unknown): PITFALLS raft.
// A leader handing over (a SIGTERM's shutdown, an operator's transfer)
// turns every apply away before appending it: not done, retry shortly.
func classifyApplyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrRaftShutdown),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNoLeader, err)
	default: // ErrLeadershipLost, timeouts, anything else: it may commit later
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
}

// ReadBarrier makes a read on this server linearizable. Default mode: the
// leader confirms it still leads a quorum (VerifyLeader) and waits until its
// FSM has applied everything in its log at the time of the request, which
// includes every acknowledged write. Consistent mode appends a barrier entry.
func (s *Store) ReadBarrier(ctx context.Context, mode ReadMode) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	if mode == ReadConsistent {
		if err := s.wait(ctx, s.raft.Barrier(timeoutOf(ctx))); err != nil {
			return classifyReadError(err)
		}
	}
	target := s.raft.LastIndex()
	if err := s.wait(ctx, s.raft.VerifyLeader()); err != nil {
		return classifyReadError(err)
	}
	return s.waitApplied(ctx, target)
}

func classifyReadError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return fmt.Errorf("%w: %w", ErrNoLeader, err)
}

func timeoutOf(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return defaultApplyTimeout
}

// waitApplied waits until the FSM has applied index.
func (s *Store) waitApplied(ctx context.Context, index uint64) error {
	for s.raft.AppliedIndex() < index {
		watch := s.fsm.WatchCh()
		if s.raft.AppliedIndex() >= index {
			return nil
		}
		select {
		case <-watch:
		case <-time.After(5 * time.Millisecond): // entries that change no table do not close watch
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for index %d: %w", ErrNoLeader, index, ctx.Err())
		}
	}
	return nil
}

func (s *Store) waitReady(ctx context.Context) error {
	s.readyMu.Lock()
	ch := s.readyCh
	s.readyMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: leader has not caught up yet: %w", ErrNoLeader, ctx.Err())
	}
}

// Ready reports whether this server leads and has caught up in its term.
func (s *Store) Ready() bool { return s.ready.Load() }

// setReady records whether this server has caught up as leader in its term.
func (s *Store) setReady(ready bool) {
	s.readyMu.Lock()
	defer s.readyMu.Unlock()
	if ready == s.ready.Load() {
		return
	}
	s.ready.Store(ready)
	if ready {
		close(s.readyCh)
	} else {
		s.readyCh = make(chan struct{})
	}
}

// SaveSnapshot streams a fresh snapshot of the FSM in the snapshot format.
func (s *Store) SaveSnapshot(ctx context.Context, w io.Writer) error {
	if err := s.ReadBarrier(ctx, ReadDefault); err != nil {
		return err
	}
	snap, err := s.fsm.Snapshot()
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Release()
	return fsm.PersistTo(snap, w)
}

// maxRestoreIndex bounds the index of a snapshot an operator restores:
// Raft places the restore past it, and a file claiming an index near the
// top of the range would wrap Raft's indexes around. No cluster writes 2^62
// entries.
const maxRestoreIndex = 1 << 62

// RestoreSnapshot replaces the whole cluster state with a snapshot: the
// leader restores it through Raft, so every server installs it.
func (s *Store) RestoreSnapshot(ctx context.Context, r io.Reader) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	// Validate fully (checksum included) before touching Raft.
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	_, hdr, err := fsm.ReadSnapshot(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %w", fsm.ErrInvalid, err)
	}
	if hdr.Index > maxRestoreIndex {
		return fmt.Errorf("%w: snapshot index %d is out of range (at most %d)", fsm.ErrInvalid, hdr.Index, uint64(maxRestoreIndex))
	}
	// Raft places the restore past both its log and meta.Index: with the
	// file's index, the entries after it index past the restored state's
	// (a blocking query or an event stream resuming there sees them).
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: hdr.Index, Size: int64(len(data))}
	if err := s.raft.Restore(meta, bytes.NewReader(data), timeoutOf(ctx)); err != nil {
		return fmt.Errorf("%w: restore: %w", ErrOutcomeUnknown, err)
	}
	return nil
}
