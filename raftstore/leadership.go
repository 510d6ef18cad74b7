package raftstore

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// barrierAttempts is how often a new leader retries its first barrier before
// it gives leadership away rather than lead without serving (PITFALLS raft).
const barrierAttempts = 3

// Term is what a server does with one stretch of leadership: Prepare runs
// once the FSM holds everything earlier leaders committed and before reads
// are served (a failure gives leadership away); Run then lasts until the
// term ends and must return promptly when its context does.
type Term struct {
	Prepare func(ctx context.Context) error
	Run     func(ctx context.Context)
}

// RunLeadership drains Raft's leadership notifications until ctx ends,
// running t for each term. It never blocks Raft: the channel is buffered
// and read continuously (PITFALLS raft: LeaderCh drops transitions).
func (s *Store) RunLeadership(ctx context.Context, t Term) {
	var cur *term
	defer func() { cur.stop(s) }()
	for {
		select {
		case leader := <-s.notifyCh:
			switch {
			case leader && cur == nil:
				cur = s.startTerm(ctx, t)
			case !leader:
				cur.stop(s)
				cur = nil
			}
		case <-ctx.Done():
			return
		}
	}
}

// term is one running stretch of leadership.
type term struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Store) startTerm(ctx context.Context, t Term) *term {
	lctx, cancel := context.WithCancel(ctx)
	cur := &term{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(cur.done)
		s.lead(lctx, t)
	}()
	return cur
}

// stop ends the term and waits for it: Run watches its context, so this
// returns promptly.
func (t *term) stop(s *Store) {
	if t == nil {
		return
	}
	t.cancel()
	<-t.done
	s.setReady(false)
}

// lead establishes leadership (a barrier, so the FSM holds everything earlier
// leaders committed), prepares, and runs the term until ctx ends.
func (s *Store) lead(ctx context.Context, t Term) {
	s.log.Info("elected leader; catching up before serving")
	err := s.establish(ctx)
	if err == nil && t.Prepare != nil {
		err = t.Prepare(ctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("cannot establish leadership; transferring it", "err", err)
			if err := s.raft.LeadershipTransfer().Error(); err != nil {
				s.log.Warn("leadership transfer failed", "err", err)
			}
		}
		return
	}
	s.setReady(true)
	s.log.Info("leader ready", "index", s.raft.AppliedIndex())
	if t.Run != nil {
		t.Run(ctx)
	}
}

func (s *Store) establish(ctx context.Context) error {
	var err error
	for range barrierAttempts {
		if err = s.wait(ctx, s.raft.Barrier(10*time.Second)); err == nil {
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
