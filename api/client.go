package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Header names shared with the server.
const (
	HeaderToken       = "X-Amserver-Token"
	HeaderIndex       = "X-Amserver-Index"
	HeaderKnownLeader = "X-Amserver-Known-Leader"
	HeaderLastContact = "X-Amserver-Last-Contact" // milliseconds
	HeaderForwarded   = "X-Amserver-Forwarded"
	// HeaderForwardedTo names the server a follower meant to reach; any
	// other server that receives the request refuses it.
	HeaderForwardedTo = "X-Amserver-Forwarded-To"
	// HeaderNextToken names the next page of a list; absent on the last.
	HeaderNextToken = "X-Amserver-NextToken"
)

// DefaultMaxRetries bounds the retries of an idempotent request answered
// 503 noLeader: with retryDelay, about 5 s, and elections settle within a
// second or two.
const DefaultMaxRetries = 60

// Client talks to one amserver server; followers forward to the leader.
// It is safe for concurrent use.
type Client struct {
	base       *url.URL
	token      string
	hc         *http.Client
	tls        *tls.Config
	maxRetries int
	onRead     func(QueryMeta) // WithReadHook
}

// Option configures a Client.
type Option func(*Client)

// WithReadHook calls fn with the metadata of every read answered: a
// caller of stale reads can tell the user that the server answering knows
// no leader, or has not heard from it for a while.
func WithReadHook(fn func(QueryMeta)) Option { return func(c *Client) { c.onRead = fn } }

// WithToken sends an ACL token with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the default HTTP client. Its Timeout must exceed
// the longest blocking-query wait used.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTLSConfig sets the TLS configuration for https addresses: the CA to
// trust, a client certificate, the server name to verify. It applies to the
// default HTTP client or to one given with WithHTTPClient whose transport
// is an *http.Transport.
func WithTLSConfig(tc *tls.Config) Option { return func(c *Client) { c.tls = tc } }

// WithMaxRetries bounds the retries on 503 noLeader; 0 disables them.
func WithMaxRetries(n int) Option { return func(c *Client) { c.maxRetries = max(n, 0) } }

// New returns a client for addr: a URL ("http://127.0.0.1:7070") or a bare
// host:port, which means http.
func New(addr string, opts ...Option) (*Client, error) {
	if addr == "" {
		return nil, errors.New("amserver: empty server address")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("amserver: server address %q: %w", addr, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("amserver: server address %q: want http(s)://host:port", addr)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	// The client adds /v1 itself: with it in the address every request went
	// to /v1/v1/..., whose 404 read as "bundle not found" for one that exists.
	if strings.HasSuffix(u.Path, "/v1") {
		return nil, fmt.Errorf("amserver: server address %q: leave out /v1 (want http(s)://host:port)", addr)
	}
	c := &Client{base: u, hc: &http.Client{}, maxRetries: DefaultMaxRetries}
	for _, o := range opts {
		o(c)
	}
	if c.tls != nil {
		if err := c.useTLS(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// useTLS installs the TLS configuration in a copy of the HTTP client.
func (c *Client) useTLS() error {
	var t *http.Transport
	switch rt := c.hc.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = rt.Clone()
	default:
		return fmt.Errorf("amserver: WithTLSConfig needs an *http.Transport, the HTTP client has %T", rt)
	}
	t.TLSClientConfig = c.tls.Clone()
	hc := *c.hc
	hc.Transport = t
	c.hc = &hc
	return nil
}

// Address is the server URL the client talks to.
func (c *Client) Address() string { return c.base.String() }

// QueryOptions tunes a read. The zero value (or nil) is a linearizable read
// that does not block.
type QueryOptions struct {
	// Stale lets any server answer from its local state.
	Stale bool
	// Consistent makes the leader run a Raft barrier first.
	Consistent bool
	// Index makes the read block until the result's index passes it.
	Index uint64
	// Wait bounds the block (server default 30 s, at most 5 m).
	Wait time.Duration
}

func (q *QueryOptions) values(v url.Values) url.Values {
	if q == nil {
		return v
	}
	if v == nil {
		v = url.Values{}
	}
	if q.Stale {
		v.Set("stale", "")
	}
	if q.Consistent {
		v.Set("consistent", "")
	}
	if q.Index > 0 {
		v.Set("index", strconv.FormatUint(q.Index, 10))
	}
	if q.Wait > 0 {
		v.Set("wait", q.Wait.String())
	}
	return v
}

// QueryMeta describes the answer to a read.
type QueryMeta struct {
	// Index is the last change index of what was read; pass it as
	// QueryOptions.Index to block for the next change.
	Index       uint64
	KnownLeader bool
	LastContact time.Duration
}

func queryMeta(h http.Header) QueryMeta {
	var m QueryMeta
	m.Index, _ = strconv.ParseUint(h.Get(HeaderIndex), 10, 64)
	m.KnownLeader, _ = strconv.ParseBool(h.Get(HeaderKnownLeader))
	if ms, err := strconv.ParseInt(h.Get(HeaderLastContact), 10, 64); err == nil {
		m.LastContact = time.Duration(ms) * time.Millisecond
	}
	return m
}

// request is one call. A JSON body is kept as bytes so a retry can resend
// it; stream bodies (snapshots) cannot be retried.
type request struct {
	method string
	path   string
	query  url.Values
	body   []byte
	stream io.Reader
	// binary marks body as raw bytes (a template archive), not JSON.
	binary bool
	// idempotent requests are retried on 503 noLeader.
	idempotent bool
	// replayable requests may be sent again when a kept-alive connection
	// breaks before any answer (see markReplayable).
	replayable bool
}

func (c *Client) newRequest(method, path string, query url.Values) *request {
	idem := method == http.MethodGet || method == http.MethodPut || method == http.MethodDelete
	return &request{method: method, path: path, query: query, idempotent: idem, replayable: idem}
}

// markReplayable lets the Transport send req again on a fresh connection
// when the kept-alive one it reused breaks before any answer, as happens
// when a server's graceful shutdown closes it just as req goes out. The
// Transport replays only a rewindable body with an idempotent method or an
// Idempotency-Key entry; an empty entry marks it without being sent. The
// same failure after a server crash may follow a write that was applied,
// so a request is marked only where a repeat changes nothing on the
// server: reads, creates by id (the same id and spec answers 200), the
// upserts and flag settings, deletes (a repeat may answer notFound). A
// bundle replace is not (ReplaceBundle), nor a POST unless marked; their
// broken connections surface as outcomeUnknown (brokenWrite).
func (r *request) markReplayable(req *http.Request) {
	if r.replayable && r.stream == nil {
		req.Header["Idempotency-Key"] = nil
	}
}

func (r *request) json(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("amserver: encode %s %s body: %w", r.method, r.path, err)
	}
	r.body = b
	return nil
}

// do sends r and returns a 2xx response whose body the caller must close.
// Anything else becomes an *Error.
func (c *Client) do(ctx context.Context, r *request) (*http.Response, error) {
	var retrying *Error // why the client is retrying
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, r)
		if err != nil {
			if retrying != nil && ctx.Err() != nil {
				return nil, retrying // as when ctx ends the pause below
			}
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		apiErr := readError(resp)
		if !r.idempotent || r.stream != nil || !retryable(apiErr) || attempt >= c.maxRetries {
			return nil, apiErr
		}
		wait := min(retryAfter(resp.Header), retryDelay(attempt))
		if apiErr.Code == CodeTooManyRequests {
			// A busy server asked for a pause: honour it (jittered, so the
			// clients it turned away together come back spread out).
			wait = retryAfter(resp.Header)
			wait += rand.N(wait/2 + 1)
		}
		if !sleepCtx(ctx, wait) {
			return nil, apiErr
		}
		retrying = apiErr
	}
}

func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	u := *c.base
	u.Path += r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	switch {
	case r.stream != nil:
		body = r.stream
	case r.body != nil:
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("amserver: %s %s: %w", r.method, r.path, err)
	}
	switch {
	case r.stream != nil, r.binary:
		req.Header.Set("Content-Type", "application/octet-stream")
	case r.body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set(HeaderToken, c.token)
	}
	r.markReplayable(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, r.brokenWrite(ctx, err)
	}
	return resp, nil
}

// brokenWrite is the error of a request that got no answer. A write whose
// connection broke after it was sent (reset, closed, timed out waiting),
// and that the Transport did not or could not send again, may or may not
// have been applied: it is an *Error with code outcomeUnknown and Status 0
// (no answer), wrapping the transport's error. A dial or TLS failure (never
// sent), the caller's context, and reads stay as they are.
func (r *request) brokenWrite(ctx context.Context, err error) error {
	err = fmt.Errorf("amserver: %s %s: %w", r.method, r.path, err)
	if r.method == http.MethodGet || r.method == http.MethodHead || ctx.Err() != nil || !connBroke(err) {
		return err
	}
	unknown := &Error{Code: CodeOutcomeUnknown,
		Message: "the connection broke after the request was sent; it may or may not have been applied"}
	return fmt.Errorf("%w: %w", unknown, err)
}

// connBroke: err is a connection that failed after it was established.
func connBroke(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op == "read" || op.Op == "write"
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// readError decodes an error body; a body that is not one (a proxy's page)
// still yields an *Error with the status and a code derived from it.
func readError(resp *http.Response) *Error {
	defer closeBody(resp)
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body ErrorBody
	if err := json.Unmarshal(raw, &body); err == nil && body.Error != nil && body.Error.Code != "" {
		body.Error.Status = resp.StatusCode
		return body.Error
	}
	code := codeForStatus(resp.StatusCode)
	if resp.StatusCode == http.StatusServiceUnavailable {
		code = CodeNoLeader
	}
	return &Error{Status: resp.StatusCode, Code: code, Message: strings.TrimSpace(string(raw))}
}

// retryable: nothing was done, and the server says when to try again.
func retryable(e *Error) bool {
	return e.Code == CodeNoLeader || e.Code == CodeTooManyRequests
}

// retryDelay is the pause before retry attempt+1 after a noLeader answer:
// 25 ms, 50 ms, then 100 ms, each less up to a quarter so that clients
// turned away together come back spread out. An election takes about half
// a second (raftstore.HeartbeatTimeout 250 ms, randomised up to 3×, plus a
// vote); each ms of pause is a ms a client may see of it after it is over,
// so the pace stays at most 100 ms (issue 21: leader kill to acknowledged
// write p99 <= 1 s), and a noLeader answer is cheap for a server to give.
// A busy server's 429 sets its own pace (Retry-After), not this.
func retryDelay(attempt int) time.Duration {
	d := min(retryBase<<min(attempt, 2), 4*retryBase)
	return d - rand.N(d/4)
}

// retryBase is retryDelay's first pause.
const retryBase = 25 * time.Millisecond

// retryAfter reads Retry-After (seconds or an HTTP date), defaulting to 1 s
// and capped so a confused server cannot park a client.
func retryAfter(h http.Header) time.Duration {
	d := time.Second
	v := h.Get("Retry-After")
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 50*time.Millisecond), 30*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// query runs a GET and decodes the JSON answer into out.
func (c *Client) query(ctx context.Context, path string, params url.Values, q *QueryOptions, out any) (QueryMeta, error) {
	resp, err := c.do(ctx, c.newRequest(http.MethodGet, path, q.values(params)))
	if err != nil {
		return QueryMeta{}, err
	}
	defer closeBody(resp)
	meta := c.readMeta(resp.Header)
	if err := decodeBody(resp, out); err != nil {
		return meta, err
	}
	return meta, nil
}

// readMeta is a read answer's metadata, handed to the read hook.
func (c *Client) readMeta(h http.Header) QueryMeta {
	m := queryMeta(h)
	if c.onRead != nil {
		c.onRead(m)
	}
	return m
}

// write sends in (nil for no body) and decodes the answer into out (nil to
// discard it). It returns the status code.
func (c *Client) write(ctx context.Context, r *request, in, out any) (int, error) {
	if in != nil {
		if err := r.json(in); err != nil {
			return 0, err
		}
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return 0, err
	}
	defer closeBody(resp)
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, decodeBody(resp, out)
}

// answerBufs recycles the buffers answers are read into. A json.Decoder
// grew a fresh buffer for every answer, a third of what a create's answer
// allocated in the client (bench: write suite, c=64). json.Unmarshal copies
// what it keeps, so a buffer is free again once it returns.
var answerBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledAnswer bounds the buffers kept: a list page of megabytes is read
// rarely and should not stay resident.
const maxPooledAnswer = 64 << 10

func decodeBody(resp *http.Response, out any) error {
	buf := answerBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledAnswer {
			answerBufs.Put(buf)
		}
	}()
	if n := resp.ContentLength; n > 0 && n <= maxPooledAnswer {
		buf.Grow(int(n))
	}
	_, err := buf.ReadFrom(resp.Body)
	if err == nil {
		err = json.Unmarshal(buf.Bytes(), out)
	}
	if err != nil {
		return fmt.Errorf("amserver: decode %s %s answer: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

// pathJoin builds a path from escaped segments.
func pathJoin(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// closeBody ends a response whose body has been read as far as needed; a
// close error cannot change what was already decoded.
func closeBody(resp *http.Response) { _ = resp.Body.Close() }
