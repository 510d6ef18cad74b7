package raftstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// Raft's apply errors: those it returns before appending the entry are
// definite (the HTTP API forwards or answers noLeader, clients retry);
// anything else may still commit.
func TestClassifyApplyError(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{raft.ErrNotLeader, ErrNotLeader},
		{raft.ErrEnqueueTimeout, ErrNoLeader},
		{raft.ErrRaftShutdown, ErrNoLeader},
		// A leader shutting down hands over first and turns applies away
		// meanwhile, unappended (issue 21: SIGTERM).
		{raft.ErrLeadershipTransferInProgress, ErrNoLeader},
		{fmt.Errorf("apply: %w", raft.ErrLeadershipTransferInProgress), ErrNoLeader},
		{raft.ErrLeadershipLost, ErrOutcomeUnknown},
		{errors.New("timed out"), ErrOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			got := classifyApplyError(tt.err)
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("classifyApplyError(%v) = %v, want it to wrap %v and the cause", tt.err, got, tt.want)
			}
			for _, other := range []error{ErrNotLeader, ErrNoLeader, ErrOutcomeUnknown} {
				if !errors.Is(tt.want, other) && errors.Is(got, other) {
					t.Errorf("classifyApplyError(%v) = %v is also %v", tt.err, got, other)
				}
			}
		})
	}
}
