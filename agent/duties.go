package agent

import (
	"context"
	"time"

	"github.com/amserver/amserver/fsm"
)

// defaultDuties are the leader's control loops (DESIGN §6).
func (s *Server) defaultDuties() []Duty {
	return []Duty{
		&reconciler{s: s},
		&placer{s: s},
		&failover{s: s},
		&drainer{s: s},
		&timers{s: s},
		&services{s: s},
		&deleter{s: s, timeout: s.cfg.DeleteTimeout},
		newElastic(s),
	}
}

// waitChange blocks until the state changes, d passes, or ctx ends; false
// when ctx ended. Duties use it so that an idle cluster costs nothing.
func waitChange(ctx context.Context, watch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-watch:
	case <-t.C:
	}
	return true
}

// applyLogged applies one leader command and logs what went wrong; leader
// duties retry from replicated state, so a failure needs no other handling.
func (s *Server) applyLogged(ctx context.Context, typ fsm.MessageType, body any) *fsm.Result {
	res, err := s.store.Apply(ctx, typ, body)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.logger.Warn("leader command failed", "type", typ, "err", err)
		}
		return nil
	case res.Err != nil:
		s.logger.Debug("leader command rejected", "type", typ, "err", res.Err)
	}
	return res
}
