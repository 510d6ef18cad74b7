package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// getLeader answers from this server's view; no known leader is 503.
func (s *Server) getLeader(c echo.Context) error {
	l, ok := s.b.Leader()
	if !ok {
		return noLeader("server %s knows no leader", s.b.ServerID())
	}
	setIndex(c, s.b.State().Index())
	return c.JSON(http.StatusOK, leaderToAPI(l))
}

func (s *Server) getPeers(c echo.Context) error {
	info, err := s.b.RaftInfo(c.Request().Context())
	if err != nil {
		return err
	}
	setIndex(c, s.b.State().Index())
	return c.JSON(http.StatusOK, peersToAPI(info.Servers, s.b.Member))
}

// getHealth is 200 whenever this server answers; the body says what it
// knows, so a load balancer can check liveness and an operator quorum.
func (s *Server) getHealth(c echo.Context) error {
	idx := s.b.State().Index()
	h := api.Health{Status: "ok", ID: s.b.ServerID(), IsLeader: s.b.IsLeader(), Index: idx}
	if l, ok := s.b.Leader(); ok {
		h.KnownLeader, h.Leader = true, l.ID
	}
	h.Peers = s.peerCount()
	setIndex(c, idx)
	return c.JSON(http.StatusOK, h)
}

// peerCount is the Raft configuration's size for health. Raft keeps its
// latest configuration where a read does not wait for its main loop, but
// RaftInfo formats all of Raft's stats, and load balancers may ask for
// health thousands of times a second: a count at most a second old is
// reused, an older one read again (it was answered before, and a server
// asked for health while it bootstrapped said 0 peers for good).
func (s *Server) peerCount() int {
	p := s.peers.Load()
	if p != nil && time.Since(p.at) <= time.Second {
		return p.n
	}
	info, err := s.b.RaftInfo(context.Background())
	if err != nil {
		if p != nil {
			return p.n
		}
		return 0
	}
	s.peers.Store(&peerSample{n: len(info.Servers), at: time.Now()})
	return len(info.Servers)
}

type peerSample struct {
	n  int
	at time.Time
}

func (s *Server) getMembers(c echo.Context) error {
	members := s.b.Members()
	out := make([]api.Member, len(members))
	for i, m := range members {
		out[i] = memberToAPI(m)
	}
	setIndex(c, s.b.State().Index())
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getRaft(c echo.Context) error {
	info, err := s.b.RaftInfo(c.Request().Context())
	if err != nil {
		return err
	}
	l, ok := s.b.Leader()
	setIndex(c, s.b.State().Index())
	return c.JSON(http.StatusOK, raftToAPI(s.b.ServerID(), info, l, ok, s.b.Member))
}

// getDigest answers with this server's digest of its own state, so that a
// checker can ask every server and compare (never forwarded).
func (s *Server) getDigest(c echo.Context) error {
	st := s.b.State()
	digest, err := st.Digest()
	if err != nil {
		return fmt.Errorf("state digest: %w", err)
	}
	info, err := s.b.RaftInfo(c.Request().Context())
	if err != nil {
		return err
	}
	setIndex(c, st.Index())
	return c.JSON(http.StatusOK, api.StateDigest{
		ServerID: s.b.ServerID(), Index: st.Index(), AppliedIndex: info.AppliedIndex, Digest: digest,
	})
}

// transferLeadership takes an optional {"id"}; an empty body lets Raft pick.
func (s *Server) transferLeadership(c echo.Context) error {
	var req api.TransferLeadershipRequest
	b, err := bodyBytes(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := decodeStrict(b, &req); err != nil {
			return err
		}
	}
	if err := s.b.TransferLeadership(c.Request().Context(), req.ID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// removePeer refuses a server alive in this (the leader's) gossip: the
// leader adds a live server back within a second, so the removal looked
// done and was undone with nothing said.
func (s *Server) removePeer(c echo.Context) error {
	id := param(c, "id")
	if m, ok := s.b.Member(id); ok && m.Status == gossip.StatusAlive {
		return fmt.Errorf("%w: server %s is alive, and the leader adds a live server back at once: stop it first "+
			"(SIGTERM leaves the configuration by itself), then remove it if it is still listed", fsm.ErrConflict, id)
	}
	if err := s.b.RemovePeer(c.Request().Context(), id); err != nil {
		return err
	}
	// The event log must show the removal as it shows the leader's own
	// (serverRemoved), or a server re-added later reads as joined twice.
	// The server is out already: a failed record is logged, not answered.
	ev := &fsm.RecordEventRequest{Type: api.EventServerRemoved, NodeID: id, Now: s.now(),
		Message: fmt.Sprintf("server %s removed from raft: by an operator (remove-peer)", id)}
	if _, err := s.apply(c.Request().Context(), fsm.RecordEventType, ev); err != nil {
		s.log.Warn("recording a server's removal failed", "peer", id, "err", err)
	}
	return c.NoContent(http.StatusNoContent)
}
