package bench

import (
	"strings"
	"testing"
)

// The creates' buckets at 0.1 s and +Inf give the slow count; other
// routes, methods and buckets are ignored.
func TestParseServerWrites(t *testing.T) {
	page := `# TYPE amserver_http_request_duration_seconds histogram
amserver_http_request_duration_seconds_bucket{method="POST",route="/v1/bundles",le="0.05"} 90
amserver_http_request_duration_seconds_bucket{method="POST",route="/v1/bundles",le="0.1"} 95
amserver_http_request_duration_seconds_bucket{method="POST",route="/v1/bundles",le="+Inf"} 100
amserver_http_request_duration_seconds_bucket{method="GET",route="/v1/bundles",le="0.1"} 1
amserver_http_request_duration_seconds_bucket{method="GET",route="/v1/bundles",le="+Inf"} 50
amserver_http_request_duration_seconds_bucket{method="POST",route="/v1/bundles/plan",le="+Inf"} 7
`
	w, err := parseServerWrites(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if w != (serverWrites{total: 100, slow: 5}) {
		t.Fatalf("parseServerWrites = %+v, want total 100, slow 5", w)
	}
	if d := w.since(serverWrites{total: 40, slow: 1}); d != (serverWrites{total: 60, slow: 4}) {
		t.Fatalf("since = %+v", d)
	}
}

// The share note gives each server's mean and lowest, the leader marked,
// and says so when no server has the gauge.
func TestShareNote(t *testing.T) {
	c := &loadCluster{servers: []*loadServer{{id: "s1"}, {id: "s2"}}}
	s := &shareSamples{by: map[string][]float64{"s1": {1, 0.5, 0.25, 0.25}, "s2": {1}}}
	want := "s1 (leader) mean 0.50, lowest 0.250; s2 mean 1.00, lowest 1.000"
	if got := s.String(c, c.servers[0]); got != want {
		t.Fatalf("note %q, want %q", got, want)
	}
	if got := (&shareSamples{}).String(c, nil); got != "no share gauge" {
		t.Fatalf("no samples: %q", got)
	}
}
