package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amserver/amserver/raftstore"
)

// unmatchedRoute labels requests that matched no registered route: the raw
// URL would let any client mint new series.
const unmatchedRoute = "unmatched"

// durationBuckets reach past the longest blocking query (5 m): blocking
// reads and event streams are requests too, and a histogram that stops at
// 10 s would lump them all into +Inf.
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// requestMetrics instruments the API: requests by method, route template and
// status, their durations, and the requests forwarded to the leader. Every
// label takes its values from a closed set, so the series stay bounded
// whatever clients send.
type requestMetrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	forwarded *prometheus.CounterVec

	echo       *echo.Echo
	routesOnce sync.Once
	routes     map[string]bool // "METHOD path" of every registered route
}

// newRequestMetrics registers the API's metrics with reg. A collector already
// registered there (a second API server on one registry) is shared.
func newRequestMetrics(reg prometheus.Registerer, e *echo.Echo) (*requestMetrics, error) {
	m := &requestMetrics{echo: e}
	var err error
	m.requests, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "amserver_http_requests_total",
		Help: "HTTP requests answered by this server, by method, route template and status code.",
	}, []string{"method", "route", "code"}))
	if err != nil {
		return nil, err
	}
	m.duration, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "amserver_http_request_duration_seconds",
		Help: "Time to answer an HTTP request, by method and route template. " +
			"Blocking queries and event streams count their whole wait.",
		Buckets: durationBuckets,
	}, []string{"method", "route"}))
	if err != nil {
		return nil, err
	}
	m.forwarded, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "amserver_http_forwarded_requests_total",
		Help: "Requests this server forwarded to the leader, by kind (read, write) and result " +
			"(ok: the leader answered; noLeader: none known or already forwarded; error: the forward failed).",
	}, []string{"kind", "result"}))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// register adds c to reg, or returns the equal collector reg already holds.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// middleware records each request once its answer is known. It runs
// outermost, so a recovered panic counts as the 500 it becomes.
func (m *requestMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		method := methodLabel(c.Request().Method)
		route := unmatchedRoute
		if !errors.Is(err, echo.ErrNotFound) && !errors.Is(err, echo.ErrMethodNotAllowed) {
			route = m.route(method, c.Path())
		}
		status := c.Response().Status
		if err != nil && !c.Response().Committed {
			status, _ = classify(err) // what handleError is about to send
		}
		m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
		return err
	}
}

// route is the request's route template, or unmatchedRoute when no route
// handles this method and path. The router's own 404 and 405 are unmatched
// too: echo then reports the nearest route in the tree as the path.
func (m *requestMetrics) route(method, path string) string {
	m.routesOnce.Do(func() {
		m.routes = map[string]bool{}
		for _, r := range m.echo.Routes() {
			m.routes[r.Method+" "+r.Path] = true
		}
	})
	if !m.routes[method+" "+path] {
		return unmatchedRoute
	}
	return path
}

// methodLabel keeps the standard methods and folds anything else.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// countForward records one forward's outcome; nil-safe for servers built
// without metrics.
func (m *requestMetrics) countForward(write bool, err error) {
	if m == nil {
		return
	}
	kind, result := "read", "ok"
	if write {
		kind = "write"
	}
	switch {
	case errors.Is(err, raftstore.ErrNoLeader):
		result = "noLeader"
	case err != nil:
		result = "error"
	}
	m.forwarded.WithLabelValues(kind, result).Inc()
}

// getMetrics serves the metrics handler the server was given. Like every
// read it says the index of the state it saw.
func (s *Server) getMetrics(c echo.Context) error {
	setIndex(c, s.b.State().Index())
	s.metricsHandler.ServeHTTP(c.Response(), c.Request())
	return nil
}
