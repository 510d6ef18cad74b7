package httpapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

// apply commits one command through the backend and folds the two error
// levels into one: the FSM's verdict (a definite failure, state unchanged)
// and Raft's (not queued, or outcome unknown).
func (s *Server) apply(ctx context.Context, t fsm.MessageType, body any) (*fsm.Result, error) {
	res, err := s.b.Apply(ctx, t, body)
	switch {
	case err == nil && res == nil:
		return nil, fmt.Errorf("%w: %s: backend returned no result", raftstore.ErrOutcomeUnknown, t)
	case err == nil:
		return res, res.Err
	case errors.Is(err, raftstore.ErrNotLeader), errors.Is(err, raftstore.ErrNoLeader):
		return nil, err // definitely not queued: safe to forward or retry
	case errors.Is(err, raftstore.ErrOutcomeUnknown):
		return nil, err
	}
	// Anything else (a deadline, a lost connection) leaves the command's
	// fate open; reporting a definite failure could make a client retry a
	// write that committed, so it is reported as unknown.
	return nil, fmt.Errorf("%w: %s: %w", raftstore.ErrOutcomeUnknown, t, err)
}

// now is the leader's clock as stamped into commands.
func (s *Server) now() int64 { return s.b.Now().UnixNano() }
