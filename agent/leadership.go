package agent

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// barrierAttempts is how often a new leader retries its first barrier before
// it gives leadership away rather than lead without serving (PITFALLS raft).
const barrierAttempts = 3

// monitorLeadership drains Raft's leadership notifications for the life of
// the server, starting leader duties on election and stopping them on loss.
// It never blocks Raft: the channel is buffered and read continuously.
func (s *Server) monitorLeadership(ctx context.Context) {
	var term *leaderTerm
	defer func() { term.stop(s) }()
	for {
		select {
		case leader := <-s.notifyCh:
			switch {
			case leader && term == nil:
				term = s.startTerm(ctx)
			case !leader:
				term.stop(s)
				term = nil
			}
		case <-ctx.Done():
			return
		}
	}
}

// leaderTerm is one stretch of leadership and its running duties.
type leaderTerm struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Server) startTerm(ctx context.Context) *leaderTerm {
	lctx, cancel := context.WithCancel(ctx)
	t := &leaderTerm{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		s.lead(lctx)
	}()
	return t
}

// stop ends the term's duties and waits for them: every duty watches its
// context, so this returns promptly.
func (t *leaderTerm) stop(s *Server) {
	if t == nil {
		return
	}
	t.cancel()
	<-t.done
	s.store.setReady(false)
}

// lead establishes leadership (a barrier, so the FSM holds everything earlier
// leaders committed) and then runs the leader duties until ctx ends.
func (s *Server) lead(ctx context.Context) {
	s.logger.Info("elected leader; catching up before serving")
	err := s.establish(ctx)
	if err == nil {
		err = s.ensureConfigTokens(ctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Error("cannot establish leadership; transferring it", "err", err)
			if err := s.raft.LeadershipTransfer().Error(); err != nil {
				s.logger.Warn("leadership transfer failed", "err", err)
			}
		}
		return
	}
	s.store.setReady(true)
	s.logger.Info("leader ready", "index", s.raft.AppliedIndex())
	s.runDuties(ctx)
}

func (s *Server) establish(ctx context.Context) error {
	var err error
	for range barrierAttempts {
		if err = s.store.wait(ctx, s.raft.Barrier(10*time.Second)); err == nil {
			return nil
		}
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}

// Duty is one leader control loop. Each rebuilds its work from replicated
// state when it starts; none keeps truth only in memory (DESIGN §6).
type Duty interface {
	Name() string
	Run(ctx context.Context)
}

func (s *Server) runDuties(ctx context.Context) {
	duties := s.duties
	done := make(chan struct{}, len(duties))
	for _, d := range duties {
		go func(d Duty) {
			defer func() { done <- struct{}{} }()
			d.Run(ctx)
		}(d)
	}
	for range duties {
		<-done
	}
}
