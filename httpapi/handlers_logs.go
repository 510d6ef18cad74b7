package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// getAssignmentLogs proxies GET /v1/assignments/{id}/logs to the worker
// that runs the assignment (DESIGN §7). Any server finds the assignment's
// node in its own state (a follower that does not know it yet forwards
// the request to the leader, unless ?stale) and streams the worker's
// answer as it comes, never holding the whole body; the caller leaving
// (or this server stopping) cancels the request to the worker. The
// caller's token travels along, and the worker asks a server whether it
// may read, so the worker needs no trust in the server that calls it.
func (s *Server) getAssignmentLogs(c echo.Context) error {
	opts, err := api.ParseLogOptions(c.QueryParams())
	if err != nil {
		return badRequest("%s", err.Error())
	}
	mode, err := readConsistency(c)
	if err != nil {
		return err
	}
	id := param(c, "id")
	st := s.b.State()
	node, ok := assignmentNode(st, id)
	switch {
	case mode == readStale:
		s.setContactHeaders(c)
	case !ok:
		// This server's state may lag the leader's, which the caller read
		// the assignment's id from (a bundle read is linearizable): a job
		// just placed is not here yet. Ask the leader's state. (An id that
		// is found names its node: no state could say another.)
		if c.Request().Header.Get(api.HeaderForwarded) == "" && !s.b.IsLeader() {
			return s.forward(c, false)
		}
		rm := raftstore.ReadDefault
		if mode == readConsistent {
			rm = raftstore.ReadConsistent
		}
		if err := s.b.ReadBarrier(c.Request().Context(), rm); err == nil {
			st = s.b.State()
			node, ok = assignmentNode(st, id)
		}
	}
	if !ok {
		return notFound("assignment %q not found", id)
	}
	base, err := s.workerHTTP(node)
	if err != nil {
		return err
	}
	closeStream, err := s.logStreams.open(caller(c))
	if err != nil {
		return err
	}
	defer closeStream()
	ctx, cancel := context.WithCancelCause(c.Request().Context())
	defer cancel(nil)
	go cancelWhenGone(ctx, s.stopping, cancel, s.workerGone(node))
	u := base + "/v1/assignments/" + url.PathEscape(id) + "/logs?" + opts.Values().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return workerUnreachable(http.StatusBadGateway, "node %q publishes a bad log address: %v", node, err)
	}
	if tok := requestSecret(c.Request()); tok != "" {
		req.Header.Set(api.HeaderToken, tok)
	}
	resp, err := s.fwd.Do(req)
	if cause := context.Cause(ctx); errors.Is(cause, errWorkerGone) {
		return workerUnreachable(http.StatusServiceUnavailable, "node %q stopped answering: %v", node, cause)
	}
	if err != nil {
		return workerUnreachable(http.StatusBadGateway, "node %q does not answer: %v", node, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound && st.Assignment(id) == nil {
			// A finished batch job: its worker kept the output a while only.
			return notFound("node %s no longer keeps the output of finished job %q (a worker keeps it for its --retain-finished, 1 h by default, and for at most 256 jobs)", node, id)
		}
		return workerError(node, resp)
	}
	setIndex(c, st.Index(tableAssignments))
	return streamText(c, resp.Body)
}

// assignmentNode is the node that runs assignment id, or ran it (a
// finished batch job: its worker keeps the output a while).
func assignmentNode(st *fsm.State, id string) (string, bool) {
	if a := st.Assignment(id); a != nil {
		return a.NodeID, true
	}
	return st.RanOn(id)
}

// errWorkerGone ends a log request whose worker gossip reports dead or
// gone.
var errWorkerGone = errors.New("its worker is gone from gossip")

// workerGone is errWorkerGone once gossip reports node's worker dead or
// gone. Suspect is not enough: a suspicion that clears would have cut a
// healthy stream.
func (s *Server) workerGone(node string) func() error {
	return func() error {
		if m, ok := s.b.Member(node); !ok || m.Status == gossip.StatusDead || m.Status == gossip.StatusLeft {
			return fmt.Errorf("%w (gossip says %s)", errWorkerGone, memberStatus(m, ok))
		}
		return nil
	}
}

func memberStatus(m gossip.Member, known bool) string {
	if !known {
		return "unknown"
	}
	return string(m.Status)
}

// workerHTTP is the log address a node's worker publishes in gossip.
func (s *Server) workerHTTP(node string) (string, error) {
	for _, m := range s.b.Members() {
		if m.Name != node || m.Meta.Role != gossip.RoleWorker {
			continue
		}
		if m.Status != gossip.StatusAlive {
			return "", workerUnreachable(http.StatusServiceUnavailable, "node %q is %s", node, m.Status)
		}
		if m.Meta.HTTPAddr == "" {
			return "", workerUnreachable(http.StatusServiceUnavailable, "the worker of node %q serves no logs (it runs without an HTTP address)", node)
		}
		return m.Meta.HTTPAddr, nil
	}
	return "", workerUnreachable(http.StatusServiceUnavailable, "node %q has no worker in this server's gossip view", node)
}

// streamText copies the worker's answer as it arrives, flushing each
// piece, until the worker ends it or the caller leaves. An answer that
// breaks off (the worker died, gossip declared it gone, this server is
// stopping) is cut short for the caller too, without the end of a chunked
// answer, so that it reads as truncated (unexpected EOF) and never as a
// log that simply ended.
func streamText(c echo.Context, body io.Reader) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the caller left
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return nil // the worker ended the answer
		}
		if err != nil {
			panic(http.ErrAbortHandler) // net/http drops the connection; echo's Recover passes it on
		}
	}
}

// workerError relays a worker's error answer (the same error body as
// ours) with its status; anything else is a bad gateway.
func workerError(node string, resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body api.ErrorBody
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&body); err == nil && body.Error != nil && body.Error.Code != "" {
		return &httpError{status: resp.StatusCode, code: body.Error.Code, message: fmt.Sprintf("node %s: %s", node, body.Error.Message)}
	}
	return workerUnreachable(http.StatusBadGateway, "node %q answered %d", node, resp.StatusCode)
}

func workerUnreachable(status int, format string, args ...any) error {
	return &httpError{status: status, code: api.CodeWorkerUnreachable, message: fmt.Sprintf(format, clipArgs(args)...)}
}
