package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/plant"
	"github.com/amserver/amserver/raftstore"
)

// consistency is what a read asks for (DESIGN §5).
type consistency int

const (
	readDefault consistency = iota
	readConsistent
	readStale
)

func readConsistency(c echo.Context) (consistency, error) {
	stale, err := flagParam(c, "stale")
	if err != nil {
		return 0, err
	}
	consistent, err := flagParam(c, "consistent")
	if err != nil {
		return 0, err
	}
	switch {
	case stale && consistent:
		return 0, badRequest("stale and consistent are mutually exclusive")
	case stale:
		return readStale, nil
	case consistent:
		return readConsistent, nil
	}
	return readDefault, nil
}

// readMW makes a read linearizable by default: a follower forwards it to
// the leader, the leader runs a read barrier first. ?stale serves locally on
// any server and says how stale it may be.
func (s *Server) readMW(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		mode, err := readConsistency(c)
		if err != nil {
			return err
		}
		if mode == readStale || plant.Active(plant.StaleRead) {
			s.setContactHeaders(c)
			return next(c)
		}
		if !s.b.IsLeader() {
			return s.forward(c, false)
		}
		rm := raftstore.ReadDefault
		if mode == readConsistent {
			rm = raftstore.ReadConsistent
		}
		if err := s.b.ReadBarrier(c.Request().Context(), rm); err != nil {
			if errors.Is(err, raftstore.ErrNotLeader) {
				return s.forward(c, false) // deposed since IsLeader: try the new leader
			}
			return err
		}
		s.setContactHeaders(c)
		return next(c)
	}
}

// diagnosticBarrier bounds the leader's read barrier before a diagnostic
// answer: a leader that cannot reach a quorum answers from what it knows
// rather than wait for its lease to run out or its client to give up.
const diagnosticBarrier = 2 * time.Second

// diagnosticMW serves an operator diagnostic (the Raft configuration): the
// leader's answer when there is a leader, and otherwise the asked server's
// own, where readMW would refuse with noLeader. An operator needs it most
// when quorum is lost; the answer names the server that gave it, and the
// contact headers say whether it knew a leader.
func (s *Server) diagnosticMW(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		mode, err := readConsistency(c)
		if err != nil {
			return err
		}
		if mode != readStale {
			if done, err := s.leaderAnswers(c, next); done {
				return err
			}
		}
		s.setContactHeaders(c)
		return next(c)
	}
}

// leaderAnswers has the leader answer: here after a bounded read barrier,
// or by forwarding. done is false when no leader could answer and nothing
// was sent, so the caller answers locally.
func (s *Server) leaderAnswers(c echo.Context, next echo.HandlerFunc) (done bool, err error) {
	if s.b.IsLeader() {
		ctx, cancel := context.WithTimeout(c.Request().Context(), diagnosticBarrier)
		defer cancel()
		if err := s.b.ReadBarrier(ctx, raftstore.ReadDefault); err != nil {
			if gone := c.Request().Context().Err(); gone != nil {
				return true, gone // the client gave up
			}
			return false, nil // leadership unconfirmed: answer as any server would
		}
		s.setContactHeaders(c)
		return true, next(c)
	}
	if _, ok := s.b.Leader(); !ok {
		return false, nil
	}
	// Bounded too: a leader that accepts and never answers (a frozen
	// process) held the forward for as long as the client waited. The
	// bound leaves the leader its own barrier's time.
	req := c.Request()
	ctx, cancel := context.WithTimeout(req.Context(), 2*diagnosticBarrier)
	defer cancel()
	c.SetRequest(req.WithContext(ctx))
	err = s.forward(c, false)
	c.SetRequest(req)
	if gone := req.Context().Err(); gone != nil {
		return true, gone // the client gave up
	}
	if (errors.Is(err, raftstore.ErrNoLeader) || ctx.Err() != nil) && !c.Response().Committed {
		return false, nil
	}
	return true, err
}

func (s *Server) setContactHeaders(c echo.Context) {
	h := c.Response().Header()
	_, known := s.b.Leader()
	known = known || s.b.IsLeader()
	h.Set(api.HeaderKnownLeader, strconv.FormatBool(known))
	h.Set(api.HeaderLastContact, strconv.FormatInt(s.b.LastContact().Milliseconds(), 10))
}

// writeMW sends a write to the leader. The body is buffered first (which
// enforces the limit before anything is forwarded) so that when leadership
// moves between the check and Apply the write can be forwarded once more.
func (s *Server) writeMW(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, err := bodyBytes(c); err != nil {
			return err
		}
		start := time.Now()
		err := s.leadOrForward(c, next)
		if err == nil && c.Response().Status < http.StatusInternalServerError {
			s.admit.observe(time.Since(start)) // expensive reads yield when writes slow down
		}
		return err
	}
}

// leadOrForward applies a write here as leader, or forwards it.
func (s *Server) leadOrForward(c echo.Context, next echo.HandlerFunc) error {
	if !s.b.IsLeader() {
		return s.forward(c, true)
	}
	err := next(c)
	if errors.Is(err, raftstore.ErrNotLeader) && !c.Response().Committed {
		return s.forward(c, true)
	}
	return err
}

// streamWriteMW is writeMW for bodies too large to buffer (snapshot
// restore): forwarded as a stream, and never a second time.
func (s *Server) streamWriteMW(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(streamKey, true)
		if !s.b.IsLeader() {
			return s.forward(c, true)
		}
		err := next(c)
		if errors.Is(err, raftstore.ErrNotLeader) {
			return noLeader("leadership moved during the request; retry")
		}
		return err
	}
}

// setIndex sets the index header: at least 1, so a client passing it back
// always blocks (index 0 means "do not block").
func setIndex(c echo.Context, index uint64) {
	c.Response().Header().Set(api.HeaderIndex, strconv.FormatUint(max(index, 1), 10))
}
