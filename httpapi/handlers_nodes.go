package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

var nodeStatuses = []string{fsm.NodeReady, fsm.NodeSuspect, fsm.NodeDown, fsm.NodeLeft, fsm.NodeUnknown}

// A node's API form shows its tier (pools) and assignment count.
var nodeTables = []string{tableNodes, tablePools, tableAssignments}

// view gathers what rendering nodes needs besides the state.
func (s *Server) nodeView(st *fsm.State) nodeView {
	seen := map[string]time.Time{}
	for _, m := range s.b.Members() {
		if !m.LastSeen.IsZero() {
			seen[m.Name] = m.LastSeen.UTC()
		}
	}
	return nodeView{st: st, lastSeen: seen}
}

func (s *Server) getNode(c echo.Context) error {
	id := param(c, "id")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		n := st.Node(id)
		if n == nil {
			return nil, notFound("node %q not found", id)
		}
		return s.nodeView(st).node(n), nil
	}, nodeTables...)
}

// registerNode registers a node or replaces its inventory; the FSM keeps
// its status, flags and reservations.
func (s *Server) registerNode(c echo.Context) error {
	id := param(c, "id")
	var in api.NodeSpec
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	if err := checkBodyID("node id", in.ID, id); err != nil {
		return err
	}
	n, err := nodeFromAPI(id, in)
	if err != nil {
		return err
	}
	if err := fsm.ValidateNode(&n); err != nil {
		return err
	}
	res, err := s.apply(c.Request().Context(), fsm.RegisterNodeType, fsm.RegisterNodeRequest{Node: n, Now: s.now()})
	if err != nil {
		return err
	}
	return s.answerNode(c, id, res.Index, http.StatusOK)
}

// answerNode renders a node after a write to it.
func (s *Server) answerNode(c echo.Context, id string, index uint64, status int) error {
	setIndex(c, index)
	st := s.b.State()
	n := st.Node(id)
	if n == nil {
		return notFound("node %q was removed concurrently", id)
	}
	return c.JSON(status, s.nodeView(st).node(n))
}

// deregisterNode refuses while the node holds reservations unless ?force,
// and while its worker is alive in gossip: a live worker finds its node
// gone at its next poll and registers it again, so the removal looked done
// and was undone with nothing said. A worker the servers refuse is the
// exception: registering afresh is what deregistering it is for.
func (s *Server) deregisterNode(c echo.Context) error {
	force, err := flagParam(c, "force")
	if err != nil {
		return err
	}
	id := param(c, "id")
	if m, ok := s.b.Member(id); ok && m.Status == gossip.StatusAlive &&
		m.Meta.Tags[gossip.TagRegistration] != gossip.RegistrationRefused {
		return fmt.Errorf("%w: node %s's worker is alive and would register the node again at once: stop the worker first "+
			"(drain the node to move its work off meanwhile), then deregister it", fsm.ErrConflict, id)
	}
	req := fsm.DeregisterNodeRequest{NodeID: id, Force: force, Now: s.now()}
	res, err := s.apply(c.Request().Context(), fsm.DeregisterNodeType, req)
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) cordonNode(c echo.Context) error { return s.setNodeFlag(c, fsm.NodeCordonType, true) }
func (s *Server) uncordonNode(c echo.Context) error {
	return s.setNodeFlag(c, fsm.NodeCordonType, false)
}
func (s *Server) drainNode(c echo.Context) error { return s.setNodeFlag(c, fsm.NodeDrainType, true) }

func (s *Server) setNodeFlag(c echo.Context, t fsm.MessageType, on bool) error {
	if err := emptyBody(c); err != nil {
		return err
	}
	id := param(c, "id")
	res, err := s.apply(c.Request().Context(), t, fsm.NodeFlagRequest{NodeID: id, On: on, Now: s.now()})
	if err != nil {
		return err
	}
	return s.answerNode(c, id, res.Index, http.StatusOK)
}

// nodeAssignments is the worker's long poll: what it must run or stop.
func (s *Server) nodeAssignments(c echo.Context) error {
	id := param(c, "id")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		list := st.NodeAssignments(id)
		if len(list) == 0 && st.Node(id) == nil {
			return nil, notFound("node %q not found", id)
		}
		out := make([]api.Assignment, len(list))
		for i, a := range list {
			out[i] = assignmentToAPI(a)
		}
		return out, nil
	}, tableAssignments, tableNodes)
}

var reportStates = []string{fsm.JobRunning, fsm.JobStopped, fsm.JobFailed, fsm.JobExited}

// maxMessage bounds a status message: it is replicated with the state.
const maxMessage = 4096

func (s *Server) reportStatus(c echo.Context) error {
	var in api.AssignmentStatus
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	switch {
	case !slices.Contains(reportStates, in.State):
		return validationErr("state %q must be one of %v", in.State, reportStates)
	case len(in.Message) > maxMessage:
		return validationErr("message is %d bytes, at most %d allowed", len(in.Message), maxMessage)
	case in.ExitCode != nil && in.State != fsm.JobExited:
		return validationErr("exitCode goes with state exited, not %q", in.State)
	}
	req := fsm.AssignmentStatusRequest{
		NodeID: param(c, "id"), AssignmentID: param(c, "aid"), Status: in.State, Message: in.Message, Now: s.now(),
		Generation: in.Generation, RelaunchUnavailable: true, SettleRollout: s.b.ServersApply(fsm.LevelRolloutSettle),
	}
	if in.ExitCode != nil {
		req.ExitCode = *in.ExitCode
	}
	res, err := s.apply(c.Request().Context(), fsm.AssignmentStatusType, req)
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}
