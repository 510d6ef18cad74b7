package agent_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// scrapeMetrics fetches a server's /metrics and parses the text format.
func scrapeMetrics(t *testing.T, s *agent.Server) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.HTTPAddr()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text: %v", err)
	}
	return fams
}

// sample is the value of the series of family name whose labels include
// every pair of want; ok is false when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		default:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsAfterPlacement scrapes a running server after it placed one
// bundle and failed to place another: the application counters and gauges
// moved (the placed node's capacity and memory, total and reserved,
// included), the HTTP metrics name route templates, and raft and
// memberlist report through the same endpoint.
func TestMetricsAfterPlacement(t *testing.T) {
	tc, _, c := devCluster(t, 1, 2)
	s := tc.Servers()[0]
	ctx := ctxTimeout(t, 60*time.Second)
	fits := oneJob("fits", 1)
	fits.Jobs[0].Requirements.MemoryMiB = 512
	if _, err := c.CreateBundle(ctx, fits); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBundle(ctx, oneJob("too-big", 1000)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "one bundle placed, one unplaceable", func() error {
		if err := statesAre(t, c, api.StatePlaced, "fits"); err != nil {
			return err
		}
		return statesAre(t, c, api.StateUnplaceable, "too-big")
	})

	fams := scrapeMetrics(t, s)
	for _, tc := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"amserver_placements_total", nil, 1},
		{"amserver_placement_failures_total", nil, 1},
		{"amserver_placement_latency_seconds", nil, 1},
		{"amserver_placement_batch_duration_seconds", nil, 1},
		{"amserver_events_total", []string{"type", "bundleCreated"}, 2},
		{"amserver_is_leader", nil, 1},
		{"amserver_applied_index", nil, 1},
		{"amserver_bundles", []string{"state", "placed"}, 1},
		{"amserver_bundles", []string{"state", "unplaceable"}, 1},
		{"amserver_bundles", []string{"state", "complete"}, 0}, // a batch bundle's final states are series too
		{"amserver_bundles", []string{"state", "failed"}, 0},
		{"amserver_http_requests_total", []string{"method", "POST", "route", "/v1/bundles", "code", "201"}, 2},
		{"amserver_http_request_duration_seconds", []string{"method", "POST", "route", "/v1/bundles"}, 2},
	} {
		got, ok := sample(fams, tc.name, tc.labels...)
		if !ok || got < tc.min {
			t.Errorf("%s%v = %v (present: %v), want at least %v", tc.name, tc.labels, got, ok, tc.min)
		}
	}
	for _, name := range []string{"amserver_placement_queue_depth", "amserver_failovers_total",
		"amserver_promotions_total", "amserver_evictions_total"} {
		if fams[name] == nil {
			t.Errorf("%s is missing", name)
		}
	}
	b, _, err := c.Bundle(ctx, "fits", nil)
	if err != nil {
		t.Fatal(err)
	}
	node := b.Replicas[0].Jobs[0].NodeID
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"amserver_node_allocatable_capacity", 16}, {"amserver_node_reserved_capacity", 1},
		{"amserver_node_memory_mib", 32768}, {"amserver_node_reserved_memory_mib", 512},
	} {
		if got, ok := sample(fams, tc.name, "node", node, "pool", "default"); !ok || got != tc.want {
			t.Errorf("%s{node=%s} = %v (present: %v), want %v", tc.name, node, got, ok, tc.want)
		}
	}
	if _, ok := sample(fams, "amserver_degraded_bundles", "code", "noBackup"); !ok {
		t.Error("amserver_degraded_bundles{code=noBackup} is missing (it is exported at zero)")
	}
	for _, prefix := range []string{"raft_", "memberlist_", "go_", "process_"} {
		if !hasPrefix(fams, prefix) {
			t.Errorf("no %s series", prefix)
		}
	}
}

func hasPrefix(fams map[string]*dto.MetricFamily, prefix string) bool {
	for name := range fams {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
