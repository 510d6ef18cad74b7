package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// benchListBundles is the bundles a list benchmark walks: 10 pages of a
// thousand, half of them placed.
const benchListBundles = 10_000

// bigNodeBackend is the seeded cluster plus one ready node that holds
// any number of bundles.
func bigNodeBackend(b *testing.B, node string) *testBackend {
	b.Helper()
	tb := newTestBackend("s1")
	seedCluster(b, tb)
	tb.mustApply(b, fsm.RegisterNodeType, fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: node, Pool: "p1", TotalCapacity: 1_000_000_000, UtilizationCap: 1000, TotalCores: 8,
	}})
	tb.mustApply(b, fsm.NodeStatusType, fsm.NodeStatusRequest{NodeID: node, Status: fsm.NodeReady, AZ: "az1", Cloud: "dc"})
	return tb
}

func benchListServer(b *testing.B) *Server {
	b.Helper()
	tb := bigNodeBackend(b, "big")
	for i := range benchListBundles {
		id := fmt.Sprintf("b%06d", i)
		createBundle(b, tb, id, "silver")
		if i%2 == 0 {
			tb.mustApply(b, fsm.ApplyPlanType, fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{{
				BundleID: id, Place: []fsm.Place{{Slot: 0, Job: "enc", Node: "big", Grant: ledger.Grant{Capacity: 100}}},
			}}}}})
		}
	}
	return New(Config{Backend: tb, Metrics: testMetricsHandler()})
}

// discardWriter is a response writer that keeps the headers and counts
// the body, as a client reading and dropping it would.
type discardWriter struct {
	h     http.Header
	code  int
	bytes int64
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { w.bytes += int64(len(p)); return len(p), nil }

// walk serves every page of query and returns the pages and body bytes.
func benchWalk(b *testing.B, h http.Handler, query string) (pages int, bytes int64) {
	next := ""
	for {
		u := "/v1/bundles" + query
		if next != "" {
			u += "&next_token=" + url.QueryEscape(next)
		}
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequestWithContext(b.Context(), http.MethodGet, u, nil))
		if w.code != http.StatusOK && w.code != 0 {
			b.Fatalf("%s: %d", u, w.code)
		}
		pages++
		bytes += w.bytes
		if next = w.h.Get(api.HeaderNextToken); next == "" {
			return pages, bytes
		}
	}
}

// BenchmarkListWalk walks the bundle list at per_page=1000 in each form;
// allocations are per walk and per output byte.
func BenchmarkListWalk(b *testing.B) {
	s := benchListServer(b)
	h := s.Handler()
	for _, w := range []struct{ name, query string }{
		{"summaries", "?per_page=1000"},
		{"full", "?per_page=1000&full=true"},
	} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			var pages int
			var bytes int64
			for b.Loop() {
				s.shared = newSharedAnswers() // every walk encodes its pages
				pages, bytes = benchWalk(b, h, w.query)
			}
			b.ReportMetric(float64(bytes)/float64(pages)/1024, "KiB/page")
			b.SetBytes(bytes)
		})
	}
}
