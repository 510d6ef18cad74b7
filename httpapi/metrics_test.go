package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/raftstore"
)

// testMetricsHandler serves an empty registry: the route exists, as on a
// real server.
func testMetricsHandler() http.Handler {
	return promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})
}

// metricsEnv is a leader whose request metrics go to reg, served at /metrics.
func metricsEnv(t *testing.T, b *testBackend) (*env, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	e := newEnv(t, b, func(c *Config) {
		c.Registerer, c.Metrics = reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	})
	return e, reg
}

// scrape fetches /metrics and parses it as Prometheus text.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, http.Header) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams, resp.Header
}

// Route labels come from the route table: an unknown URL, an unknown method
// and a known path with the wrong method never put the raw request in a
// label, so clients cannot grow the series.
func TestMetricsRouteLabelsBounded(t *testing.T) {
	b := newTestBackend("s1")
	e, reg := metricsEnv(t, b)
	b.setLeader(e.hs.URL)
	requests := []struct{ method, path string }{
		{http.MethodGet, "/v1/pools"},
		{http.MethodGet, "/v1/bundles/b-123"},     // 404 from the handler, a real route
		{http.MethodGet, "/v1/no/such/thing/42"},  // no route
		{http.MethodGet, "/v1/operator/b-1/a9f3"}, // no route under a known prefix
		{http.MethodPost, "/v1/health"},           // known path, wrong method: 405
		{"BREW", "/v1/pools"},                     // unknown method
	}
	for _, r := range requests {
		e.do(r.method, r.path, nil)
	}
	for _, tc := range []struct {
		method, route, code string
	}{
		{"GET", "/v1/pools", "200"},
		{"GET", "/v1/bundles/:id", "404"},
		{"GET", unmatchedRoute, "404"},
		{"POST", unmatchedRoute, "405"},
		{"other", unmatchedRoute, "405"},
	} {
		m := counterValue(t, e.s.metrics.requests.WithLabelValues(tc.method, tc.route, tc.code))
		want := 1.0
		if tc.route == unmatchedRoute && tc.method == "GET" {
			want = 2 // both unknown paths fold into one series
		}
		if m != want {
			t.Errorf("requests{%s %s %s} = %v, want %v", tc.method, tc.route, tc.code, m, want)
		}
	}
	routes := map[string]bool{unmatchedRoute: true}
	for _, r := range e.s.echo.Routes() {
		routes[r.Path] = true
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && !routes[l.GetValue()] {
					t.Errorf("%s has route label %q, not a route template", f.GetName(), l.GetValue())
				}
				if strings.Contains(l.GetValue(), "b-123") || strings.Contains(l.GetValue(), "a9f3") {
					t.Errorf("%s carries a raw request value in %s=%q", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// counterValue reads one counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A handler that panics is counted as the 500 the client receives.
func TestMetricsCountPanicAs500(t *testing.T) {
	b := newTestBackend("s1")
	b.panicOn = "members"
	e, _ := metricsEnv(t, b)
	if resp, _ := e.do(http.MethodGet, "/v1/members", nil); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if n := counterValue(t, e.s.metrics.requests.WithLabelValues("GET", "/v1/members", "500")); n != 1 {
		t.Fatalf("500s counted: %v", n)
	}
}

// Forwards are counted by kind and result on the follower.
func TestMetricsCountForwards(t *testing.T) {
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(leader.Close)
	b := newTestBackend("s2")
	b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: leader.URL}, 0)
	e, _ := metricsEnv(t, b)
	e.do(http.MethodGet, "/v1/pools", nil)
	e.do(http.MethodPut, "/v1/pools/p", []byte(`{"name":"p"}`))
	b.setNoLeader()
	e.do(http.MethodPut, "/v1/pools/p", []byte(`{"name":"p"}`))
	for _, tc := range []struct{ kind, result string }{{"read", "ok"}, {"write", "ok"}, {"write", "noLeader"}} {
		if n := counterValue(t, e.s.metrics.forwarded.WithLabelValues(tc.kind, tc.result)); n != 1 {
			t.Errorf("forwarded{%s,%s} = %v, want 1", tc.kind, tc.result, n)
		}
	}
	// A forwarded request is also an ordinary request of its route.
	if n := counterValue(t, e.s.metrics.requests.WithLabelValues("PUT", "/v1/pools/:name", "503")); n != 1 {
		t.Errorf("the leaderless write is not counted as a 503: %v", n)
	}
}

// GET /metrics is served locally, parses as Prometheus text, carries the
// index header, and includes the request metrics.
func TestMetricsEndpoint(t *testing.T) {
	b := newTestBackend("s2")
	b.setFollower(raftstore.LeaderInfo{ID: "s1", HTTPAddr: "http://s1.invalid"}, 0)
	e, _ := metricsEnv(t, b)
	e.do(http.MethodGet, "/v1/health", nil)
	fams, hdr := scrape(t, e.hs.URL)
	if hdr.Get(api.HeaderIndex) == "" {
		t.Error("no index header")
	}
	f := fams["amserver_http_requests_total"]
	if f == nil || f.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("amserver_http_requests_total missing or not a counter: %v", f)
	}
	if fams["amserver_http_request_duration_seconds"].GetType() != dto.MetricType_HISTOGRAM {
		t.Error("the duration is not a histogram")
	}
}

// Two API servers on one registry share its collectors instead of failing.
func TestMetricsSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		New(Config{Backend: newTestBackend("s1"), Registerer: reg})
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "amserver_http_expensive_share" {
			t.Fatalf("nothing was requested, yet %s", f.GetName())
		}
		if got := f.GetMetric()[0].GetGauge().GetValue(); got != 1 {
			t.Fatalf("expensive share %v with no load, want 1", got)
		}
	}
}
