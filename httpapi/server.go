package httpapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// Defaults.
const (
	// DefaultBodyLimit is 1 MiB (DESIGN §7). echo's "1M" would be 10^6 bytes.
	DefaultBodyLimit = "1MiB"
	// DefaultSnapshotBodyLimit bounds a snapshot restore upload.
	DefaultSnapshotBodyLimit = "4GiB"
	// shutdownGrace is how long Serve waits for requests to finish.
	shutdownGrace = 10 * time.Second
	// DefaultKeepAlive spaces the blank lines that keep an idle event stream
	// (and the proxies on its way) open.
	DefaultKeepAlive = 15 * time.Second
)

// Config wires a Server.
type Config struct {
	Backend Backend
	// Exprs compiles constraint expressions during bundle validation; nil
	// skips compiling them.
	Exprs  fsm.ExprChecker
	Logger *slog.Logger
	// BodyLimit bounds request bodies ("1MiB" when empty); larger bodies
	// get 413 bodyTooLarge.
	BodyLimit string
	// SnapshotBodyLimit bounds snapshot restores ("4GiB" when empty).
	SnapshotBodyLimit string
	// ForwardClient sends requests to the leader. It must not time out
	// before the longest blocking query (5 m); the default has no timeout
	// and relies on the request's context.
	ForwardClient *http.Client
	// ACLEnabled denies every request without a token that permits it
	// (DESIGN §9); tokens live in the replicated state.
	ACLEnabled bool
	// Metrics serves GET /metrics when set: a local route, never forwarded.
	Metrics http.Handler
	// Registerer receives the API's request metrics; nil records none.
	Registerer prometheus.Registerer
	// KeepAlive is the interval of the blank line an idle event stream
	// sends (15 s when zero).
	KeepAlive time.Duration
	// UI serves the web UI rooted at "/" (ui.Handler); the server mounts it
	// at /ui/. Nil serves no UI.
	UI http.Handler
	// ForwardTLS configures the default ForwardClient for leaders that
	// serve HTTPS (their advertised address says https://).
	ForwardTLS *tls.Config
	// ShutdownGrace is how long requests in flight get to finish once
	// Serve's context ends (10 s when zero).
	ShutdownGrace time.Duration
	// MaxExpensive bounds the expensive requests (lists, event replays,
	// plans, digests) this server works on at once, and
	// MaxExpensivePerCaller those of one token (or, without one, one client
	// address); 0 takes DefaultMaxExpensive and
	// DefaultMaxExpensivePerCaller. A request waits up to QueueWait (5 s
	// when zero) for a slot, then gets 429 tooManyRequests.
	MaxExpensive          int
	MaxExpensivePerCaller int
	QueueWait             time.Duration
	// WriteLatencyFactor makes expensive requests yield to writes
	// (admission.go): when the median latency of the writes through this
	// server passes this multiple of its lowest median of the last minute,
	// expensive work gets a shrinking share of each slot's time. 0 takes
	// DefaultWriteLatencyFactor; a negative value turns it off.
	WriteLatencyFactor float64
}

// Server is the HTTP API of one amserver server.
type Server struct {
	b     Backend
	exprs fsm.ExprChecker
	log   *slog.Logger
	fwd   *http.Client
	echo  *echo.Echo

	acl            bool
	aclRules       map[string]aclRule
	metricsHandler http.Handler
	metrics        *requestMetrics // nil without a Registerer
	keepAlive      time.Duration
	grace          time.Duration
	limits         *limiter
	admit          *admission // shared with limits
	logStreams     logStreams
	shared         *sharedAnswers
	eventLines     *eventLines
	maxScan        int    // rows a list page examines at most (list.go)
	maxPageBytes   int    // a list page's body stops growing past it (list.go)
	bodyLimit      string // the request body limits, named in a 413
	snapshotLimit  string
	peers          atomic.Pointer[peerSample]

	// stopping is closed when Serve's context ends, so blocking queries and
	// event streams finish and graceful shutdown does not wait minutes.
	stopping chan struct{}
	stopOnce sync.Once
	// draining is set by Drain: answers carry Connection: close.
	draining atomic.Bool
}

// New builds the server and its routes. It panics on an invalid body limit
// or metrics that clash with others in the registry, configuration errors
// caught at startup.
func New(cfg Config) *Server {
	if cfg.Backend == nil {
		panic("httpapi: Config.Backend is required")
	}
	cfg.defaults()
	s := &Server{
		b: cfg.Backend, exprs: cfg.Exprs, log: cfg.Logger.With("component", "httpapi"),
		fwd: cfg.ForwardClient, stopping: make(chan struct{}),
		acl: cfg.ACLEnabled, aclRules: map[string]aclRule{},
		metricsHandler: cfg.Metrics, keepAlive: cfg.KeepAlive, grace: cfg.ShutdownGrace,
		limits: newLimiter(cfg.MaxExpensive, cfg.MaxExpensivePerCaller, cfg.QueueWait),
		admit:  newAdmission(max(cfg.WriteLatencyFactor, 0), defaultAdmitWindow, nil),
		shared: newSharedAnswers(), eventLines: newEventLines(defaultEventLines), maxScan: defaultMaxScan,
		maxPageBytes: defaultMaxPageBytes, bodyLimit: cfg.BodyLimit, snapshotLimit: cfg.SnapshotBodyLimit,
	}
	s.limits.admit = s.admit
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.closeWhenDraining)
	if cfg.Registerer != nil {
		m, err := newRequestMetrics(cfg.Registerer, e)
		if err == nil {
			err = registerShare(cfg.Registerer, s.admit)
		}
		if err != nil {
			panic(fmt.Sprintf("httpapi: register metrics: %v", err))
		}
		s.metrics = m
		e.Use(m.middleware)
	}
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{LogErrorFunc: s.logPanic}))
	e.Use(s.logRequests)
	e.Use(s.checkForwardTarget)
	e.Use(s.refuseCrossOrigin)
	e.Use(checkQuery)
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit: cfg.BodyLimit, Skipper: func(c echo.Context) bool { return isSnapshotRestore(c) || isTemplatePush(c) },
	}))
	s.echo = e
	s.routes(middleware.BodyLimit(cfg.SnapshotBodyLimit))
	if cfg.UI != nil {
		s.uiRoutes(cfg.UI)
	}
	return s
}

// defaults fills what the configuration leaves unset.
func (cfg *Config) defaults() {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BodyLimit == "" {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.SnapshotBodyLimit == "" {
		cfg.SnapshotBodyLimit = DefaultSnapshotBodyLimit
	}
	if cfg.ForwardClient == nil {
		cfg.ForwardClient = &http.Client{
			Transport: forwardTransport(cfg.ForwardTLS),
			// A redirect from the leader is the client's business, not ours.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = shutdownGrace
	}
	if cfg.MaxExpensive <= 0 {
		cfg.MaxExpensive = DefaultMaxExpensive()
	}
	if cfg.MaxExpensivePerCaller <= 0 {
		cfg.MaxExpensivePerCaller = min(DefaultMaxExpensivePerCaller(), cfg.MaxExpensive)
	}
	if cfg.WriteLatencyFactor == 0 {
		cfg.WriteLatencyFactor = DefaultWriteLatencyFactor
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = defaultQueueWait
	}
}

// forwardTransport keeps a connection to the leader for every concurrent
// forwarded request. http.DefaultTransport keeps only 2 idle connections per
// host, so under load a follower dialled the leader anew for most writes it
// forwarded (bench: write suite, c=64) and left sockets in TIME_WAIT.
func forwardTransport(tc *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if tc != nil {
		t.TLSClientConfig = tc
	}
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// ListenAndServe listens on addr and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen %s: %w", addr, err)
	}
	return s.Serve(ctx, l)
}

// Serve serves on l until ctx ends, then shuts down gracefully (shutdown):
// blocking queries answer at once, streams end, and in-flight writes get up
// to shutdownGrace to finish.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	conns := newConnTracker()
	l = &onceCloseListener{Listener: l}
	srv := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnState:         conns.track,
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		done <- s.shutdown(srv, l, conns)
	}()
	err := srv.Serve(l)
	if ctx.Err() == nil { // not stopping: the listener failed
		s.stop()
		return fmt.Errorf("httpapi: serve: %w", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("httpapi: shutdown: %w", err)
	}
	return nil
}

func (s *Server) stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

func isSnapshotRestore(c echo.Context) bool {
	return c.Request().Method == http.MethodPut && c.Path() == snapshotPath
}

// logPanic records a recovered panic once; the error handler then answers
// 500 internal instead of dropping the connection.
func (s *Server) logPanic(c echo.Context, err error, stack []byte) error {
	s.log.Error("panic in handler", "method", c.Request().Method, "path", c.Request().URL.Path,
		"err", err, "stack", string(stack))
	return &httpError{status: http.StatusInternalServerError, code: api.CodeInternal, message: "internal error"}
}

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err == nil && s.log.Enabled(c.Request().Context(), slog.LevelDebug) { // errors are logged by handleError
			s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", c.Response().Status, "forwardedBy", c.Request().Header.Get(api.HeaderForwarded),
				"duration", time.Since(start))
		}
		return err
	}
}
