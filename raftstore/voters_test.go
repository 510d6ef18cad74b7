package raftstore

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
)

// leadingStore is a one-voter in-memory store that leads, with s2 a
// nonvoter in its configuration (never reachable: it only has to be there).
func leadingStore(t *testing.T) *Store {
	t.Helper()
	_, tr := raft.NewInmemTransport("s1")
	s, err := Open(Config{NodeID: "s1", Transport: tr, TimeoutScale: 0.2}, fsm.New(fsm.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Shutdown()
		s.Close()
	})
	if err := s.Bootstrap(map[string]string{"s1": "s1"}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the one server to lead", func() error {
		return poll.Check(s.IsLeader(), "not the leader yet")
	})
	if err := s.Raft().AddNonvoter("s2", "s2", 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	return s
}

// A transfer to a server that cannot take over is refused for certain, not
// answered outcomeUnknown (issue: to the leader itself it said "check it
// before retrying").
func TestTransferLeadershipRefusals(t *testing.T) {
	s := leadingStore(t)
	tests := []struct {
		name, id string
		want     error
	}{
		{"the leader itself", "s1", fsm.ErrConflict},
		{"a nonvoter", "s2", fsm.ErrConflict},
		{"no other voter for Raft to pick", "", fsm.ErrConflict},
		{"not in the configuration", "ghost", fsm.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.TransferLeadership(t.Context(), tt.id)
			if !errors.Is(err, tt.want) || errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("TransferLeadership(%q) = %v, want %v and not %v", tt.id, err, tt.want, ErrOutcomeUnknown)
			}
		})
	}
	if !s.IsLeader() {
		t.Error("a refused transfer moved leadership")
	}
}

// Raft's answers to a transfer it never started are certain; anything
// else may still end with the target leading.
func TestClassifyTransferError(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{raft.ErrNotLeader, ErrNotLeader},
		{raft.ErrLeadershipTransferInProgress, fsm.ErrConflict},
		{raft.ErrEnqueueTimeout, ErrNoLeader},
		{raft.ErrRaftShutdown, ErrNoLeader},
		{fmt.Errorf("leadership transfer timeout"), ErrOutcomeUnknown},
		{fmt.Errorf("failed to make TimeoutNow RPC to s2: %w", errors.New("reset")), ErrOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			got := classifyTransferError(tt.err)
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("classifyTransferError(%v) = %v, want it to wrap %v and the cause", tt.err, got, tt.want)
			}
			for _, other := range []error{ErrNotLeader, ErrNoLeader, ErrOutcomeUnknown, fsm.ErrConflict} {
				if !errors.Is(other, tt.want) && errors.Is(got, other) {
					t.Errorf("classifyTransferError(%v) = %v is also %v", tt.err, got, other)
				}
			}
		})
	}
}

// TestInfoConfigIndex: the operator's configIndex is the index of the last
// configuration change (Raft 1.7's Stats says 0), and after a restart that
// replays no change, the newest snapshot's.
func TestInfoConfigIndex(t *testing.T) {
	s := leadingStore(t)
	f := s.Raft().RemoveServer("s2", 0, 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	want := f.Index()
	poll.Eventually(t, 10*time.Second, "the removal applied", func() error {
		info, err := s.Info(t.Context())
		if err != nil {
			return err
		}
		return poll.Check(info.ConfigIndex == want, "configIndex %d, want %d", info.ConfigIndex, want)
	})
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	restarted := &Store{fsm: fsm.New(fsm.Config{}), stores: s.stores} // what a restart from the snapshot knows
	if got := restarted.configIndex(); got != want {
		t.Fatalf("configIndex from the snapshot %d, want %d", got, want)
	}
}

// TestVotersListsNonvoters: Voters is the whole configuration, a nonvoter
// included: the servers whose command level the leader checks
// (agent/levels.go) are every server that replicates the log.
func TestVotersListsNonvoters(t *testing.T) {
	s := leadingStore(t)
	got, err := s.Voters()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"s1": "s1", "s2": "s2"}; !maps.Equal(got, want) {
		t.Fatalf("Voters() = %v, want %v", got, want)
	}
}
