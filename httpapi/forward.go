package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/raftstore"
)

// hopHeaders are connection-scoped and must not cross a proxy (RFC 9110 §7.6.1).
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forward proxies the whole request to the leader and relays its answer,
// streaming (blocking queries and event streams pass through). A request
// that was already forwarded once is never forwarded again: two servers
// that each believe the other leads would otherwise bounce it forever.
func (s *Server) forward(c echo.Context, write bool) (err error) {
	defer func() { s.metrics.countForward(write, err) }()
	req := c.Request()
	self := s.b.ServerID()
	if by := req.Header.Get(api.HeaderForwarded); by != "" {
		return noLeader("server %s is not the leader and the request was already forwarded by %s", self, by)
	}
	leader, ok := s.b.Leader()
	if !ok || leader.HTTPAddr == "" || leader.ID == self {
		return noLeader("server %s knows no leader", self)
	}
	target, err := leaderURL(leader.HTTPAddr, req.URL)
	if err != nil {
		return noLeader("leader %s: %v", leader.ID, err)
	}
	buf, body, err := forwardBody(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	defer cancel(nil)
	go cancelWhenGone(ctx, nil, cancel, s.leaderChanged(leader.ID))
	out, err := http.NewRequestWithContext(ctx, req.Method, target, body)
	if err != nil {
		return fmt.Errorf("forward to leader %s: %w", leader.ID, err)
	}
	copyHeader(out.Header, req.Header)
	out.Header.Set(api.HeaderForwarded, self)
	out.Header.Set(api.HeaderForwardedTo, leader.ID)
	// The leader counts expensive requests per client (limit.go): name the
	// client, or every anonymous request forwarded would count as ours.
	out.Header.Set(headerClient, clientIP(req))
	markReplayable(c, out, buf)
	if body != nil && out.ContentLength == 0 {
		out.ContentLength = req.ContentLength // a streamed body: keep the declared length
	}
	resp, err := s.fwd.Do(out)
	if err != nil {
		return forwardFailed(ctx, leader.ID, write, err)
	}
	defer func() { _ = resp.Body.Close() }() // the relay read what it could
	copyHeader(c.Response().Header(), resp.Header)
	c.Response().WriteHeader(resp.StatusCode)
	relay(c.Response(), resp.Body)
	return nil
}

// errLeaderChanged ends a forward whose leader this server no longer
// follows.
var errLeaderChanged = errors.New("the leader changed")

// peerCheckEvery is how often a forward or a log request in flight checks
// that the server or worker it waits on is still the one to ask.
const peerCheckEvery = 250 * time.Millisecond

// cancelWhenGone cancels a request to a peer once gone reports an error
// (its cause), or, with nil, once stop closes; it returns when ctx ends. A
// peer that stopped (SIGSTOP, a frozen VM) keeps its connections open, and
// requests to it waited for it however long while the cluster had moved
// on: a new leader answering within a second, gossip declaring a worker
// dead within seconds. Streams and long polls end too, and their clients
// ask again.
func cancelWhenGone(ctx context.Context, stop <-chan struct{}, cancel context.CancelCauseFunc, gone func() error) {
	tick := time.NewTicker(peerCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			cancel(nil)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := gone(); err != nil {
			cancel(err)
			return
		}
	}
}

// leaderChanged is errLeaderChanged once this server follows a leader
// other than the one a forward went to; while none is known, the one asked
// may still answer.
func (s *Server) leaderChanged(leader string) func() error {
	return func() error {
		if l, ok := s.b.Leader(); ok && l.ID != leader {
			return errLeaderChanged
		}
		return nil
	}
}

// checkForwardTarget refuses a forwarded request that reached a server
// other than the one the follower meant. Addresses get reused (containers,
// pod IPs): a follower with a stale leader address could otherwise write
// into whatever server now listens there, even one of another cluster.
func (s *Server) checkForwardTarget(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if to := c.Request().Header.Get(api.HeaderForwardedTo); to != "" && to != s.b.ServerID() {
			return noLeader("request forwarded to server %s reached server %s; the sender's leader address is stale",
				to, s.b.ServerID())
		}
		return next(c)
	}
}

// forwardBody is the buffered body when there is one (also as buf), else
// the request's own stream (snapshot restore), else nothing.
func forwardBody(c echo.Context) (buf []byte, body io.Reader, err error) {
	if b, ok := c.Get(bodyKey).([]byte); ok {
		return b, bytes.NewReader(b), nil
	}
	req := c.Request()
	if c.Get(streamKey) == true {
		return nil, req.Body, nil
	}
	if req.ContentLength == 0 && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
		return nil, nil, nil
	}
	b, err := bodyBytes(c)
	if err != nil {
		return nil, nil, err
	}
	return b, bytes.NewReader(b), nil
}

// streamKey marks a request whose body is forwarded as a stream.
const streamKey = "amserver.stream"

// forwardFailed says what a failed forward means for the client. A dial
// error proves the leader never saw the request; any later failure of a
// write leaves its outcome unknown. A replay-safe write (replay.go) whose
// kept-alive connection broke before any answer was already sent again by
// the Transport, so what is left here is the error of that last attempt.
func forwardFailed(ctx context.Context, leader string, write bool, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errLeaderChanged) {
		if write {
			return fmt.Errorf("%w: forwarded to leader %s, which stopped leading before it answered", raftstore.ErrOutcomeUnknown, leader)
		}
		return noLeader("leader %s stopped leading before it answered; ask again", leader)
	}
	if ctx.Err() != nil {
		return ctx.Err() // the client went away
	}
	var op *net.OpError
	if !write || (errors.As(err, &op) && op.Op == "dial") {
		return noLeader("leader %s unreachable: %v", leader, err)
	}
	return fmt.Errorf("%w: forwarded to leader %s: %w", raftstore.ErrOutcomeUnknown, leader, err)
}

func leaderURL(addr string, in *url.URL) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("bad HTTP address %q", addr)
	}
	u.Path, u.RawPath, u.RawQuery = in.Path, in.RawPath, in.RawQuery
	return u.String(), nil
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}

// relayBufs recycles relay's buffers: a fresh 32 KiB for every forwarded
// request was a good part of a follower's garbage under write load.
var relayBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relay copies the leader's answer, flushing each chunk so streams and
// long polls reach the client as they happen. A failure means one side went
// away; nothing can be reported on a response already under way.
func relay(w *echo.Response, body io.Reader) {
	rc := http.NewResponseController(w)
	bp := relayBufs.Get().(*[]byte)
	defer relayBufs.Put(bp)
	buf := *bp
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
