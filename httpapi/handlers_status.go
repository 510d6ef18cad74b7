package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
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
	return c.JSON(http.StatusOK, peersToAPI(info.Servers))
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

// peerCount is the Raft configuration's size for health, best effort:
// reading it goes through Raft's main loop, which a busy leader serves
// late, and health must answer at once. A count at most a second old is
// used; an older one is refreshed in the background.
func (s *Server) peerCount() int {
	p := s.peers.Load()
	if p == nil || time.Since(p.at) > time.Second {
		if s.peersBusy.CompareAndSwap(false, true) {
			go func() {
				defer s.peersBusy.Store(false)
				if info, err := s.b.RaftInfo(context.Background()); err == nil {
					s.peers.Store(&peerSample{n: len(info.Servers), at: time.Now()})
				}
			}()
		}
	}
	if p == nil {
		if info, err := s.b.RaftInfo(context.Background()); err == nil {
			return len(info.Servers) // the first health check waits once
		}
		return 0
	}
	return p.n
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
	return c.JSON(http.StatusOK, raftToAPI(s.b.ServerID(), info, l, ok))
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

func (s *Server) removePeer(c echo.Context) error {
	if err := s.b.RemovePeer(c.Request().Context(), param(c, "id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
