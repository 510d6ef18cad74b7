package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/httpapi"
	"github.com/amserver/amserver/internal/plant"
)

// defaultApplyTimeout bounds an apply whose context has no deadline.
const defaultApplyTimeout = 10 * time.Second

// Store wraps Raft thinly: it encodes commands, classifies apply errors into
// definite and unknown outcomes, and implements linearizable read barriers.
type Store struct {
	raft  *raft.Raft
	fsm   *fsm.FSM
	clock Clock

	// ready is true once this server, as leader, has applied a barrier in its
	// current term: before that its FSM may lag what earlier leaders committed.
	ready     atomic.Bool
	readyMu   sync.Mutex
	readyCh   chan struct{} // closed when ready becomes true
	leaderDir func(id string) string

	stopping  chan struct{} // closed when the server starts to stop
	closeOnce sync.Once

	// onCommit, when set, sees the state and index of every command this
	// leader committed without error (metrics count its events).
	onCommit func(st *fsm.State, index uint64)
}

func newStore(r *raft.Raft, f *fsm.FSM, clock Clock, httpAddrOf func(id string) string) *Store {
	return &Store{
		raft: r, fsm: f, clock: clock, readyCh: make(chan struct{}), leaderDir: httpAddrOf,
		stopping: make(chan struct{}),
	}
}

// stop releases every request waiting on Raft: the HTTP server's graceful
// shutdown would otherwise wait its whole grace period for them.
func (s *Store) stop() { s.closeOnce.Do(func() { close(s.stopping) }) }

// State returns the local FSM's read view.
func (s *Store) State() *fsm.State { return s.fsm.State() }

// WatchCh returns a channel closed at the next FSM change.
func (s *Store) WatchCh() <-chan struct{} { return s.fsm.WatchCh() }

// Now is the clock the leader stamps into commands.
func (s *Store) Now() time.Time { return s.clock.Now() }

// IsLeader reports whether this server is the Raft leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the known leader, with its HTTP address from gossip.
func (s *Store) Leader() (httpapi.LeaderInfo, bool) {
	addr, id := s.raft.LeaderWithID()
	if id == "" {
		return httpapi.LeaderInfo{}, false
	}
	return httpapi.LeaderInfo{ID: string(id), RaftAddr: string(addr), HTTPAddr: s.leaderDir(string(id))}, true
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
		return nil, httpapi.ErrNotLeader
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
	if res.Err == nil && s.onCommit != nil {
		s.onCommit(s.State(), res.Index)
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
func classifyApplyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("%w: %w", httpapi.ErrNotLeader, err)
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", httpapi.ErrNoLeader, err)
	default: // ErrLeadershipLost, timeouts, anything else: it may commit later
		return fmt.Errorf("%w: %w", httpapi.ErrOutcomeUnknown, err)
	}
}

// ReadBarrier makes a read on this server linearizable. Default mode: the
// leader confirms it still leads a quorum (VerifyLeader) and waits until its
// FSM has applied everything in its log at the time of the request, which
// includes every acknowledged write. Consistent mode appends a barrier entry.
func (s *Store) ReadBarrier(ctx context.Context, mode httpapi.ReadMode) error {
	if !s.IsLeader() {
		return httpapi.ErrNotLeader
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	if mode == httpapi.ReadConsistent {
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
		return fmt.Errorf("%w: %w", httpapi.ErrNotLeader, err)
	}
	return fmt.Errorf("%w: %w", httpapi.ErrNoLeader, err)
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
			return fmt.Errorf("%w: waiting for index %d: %w", httpapi.ErrNoLeader, index, ctx.Err())
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
		return fmt.Errorf("%w: leader has not caught up yet: %w", httpapi.ErrNoLeader, ctx.Err())
	}
}

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
	if err := s.ReadBarrier(ctx, httpapi.ReadDefault); err != nil {
		return err
	}
	snap, err := s.fsm.Snapshot()
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Release()
	return fsm.PersistTo(snap, w)
}

// RestoreSnapshot replaces the whole cluster state with a snapshot: the
// leader restores it through Raft, so every server installs it.
func (s *Store) RestoreSnapshot(ctx context.Context, r io.Reader) error {
	if !s.IsLeader() {
		return httpapi.ErrNotLeader
	}
	// Validate fully (checksum included) before touching Raft.
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	if _, _, err := fsm.ReadSnapshot(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("%w: %w", fsm.ErrInvalid, err)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Size: int64(len(data))}
	if err := s.raft.Restore(meta, bytes.NewReader(data), timeoutOf(ctx)); err != nil {
		return fmt.Errorf("%w: restore: %w", httpapi.ErrOutcomeUnknown, err)
	}
	return nil
}
