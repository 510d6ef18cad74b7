package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// benchPageServer holds n bundles shaped as the state suite's (bench/state.go):
// an encoder and a muxer with launch commands and two tags, both placed on
// one node, so one ?full=true page of a thousand is about 900 KiB.
func benchPageServer(b *testing.B, n int) *Server {
	b.Helper()
	tb := bigNodeBackend(b, "node-0001")
	for i := range n {
		id := fmt.Sprintf("channel-%06d", i)
		launch := func(bin string) fsm.Launch {
			return fsm.Launch{Driver: "exec", Command: []string{"/usr/bin/" + bin, "--channel", id}}
		}
		tb.mustApply(b, fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: fsm.BundleSpec{
			ID: id, Pool: "p1",
			Jobs: []fsm.Job{
				{Name: "enc", Requirements: ledger.Request{Capacity: 500}, Launch: launch("encoder")},
				{Name: "mux", Requirements: ledger.Request{Capacity: 250}, CoLocateWith: []string{"enc"}, Launch: launch("muxer")},
			},
			Tags: map[string]string{"team": "video", "channel": id},
		}})
		tb.mustApply(b, fsm.ApplyPlanType, fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{{
			BundleID: id, Place: []fsm.Place{
				{Slot: 0, Job: "enc", Node: "node-0001", Grant: ledger.Grant{Capacity: 500}},
				{Slot: 0, Job: "mux", Node: "node-0001", Grant: ledger.Grant{Capacity: 250}},
			},
		}}}}})
	}
	return New(Config{Backend: tb, Metrics: testMetricsHandler()})
}

// BenchmarkListPage serves one page of a thousand bundles in each form
// through the handler: allocations per page, against the bytes served.
func BenchmarkListPage(b *testing.B) {
	s := benchPageServer(b, 1000)
	h := s.Handler()
	for _, w := range []struct{ name, query string }{
		{"summaries", "?per_page=1000"},
		{"full", "?per_page=1000&full=true"},
	} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				s.shared = newSharedAnswers() // every page is encoded
				dw := &discardWriter{h: http.Header{}}
				h.ServeHTTP(dw, httptest.NewRequestWithContext(b.Context(), http.MethodGet, "/v1/bundles"+w.query, nil))
				if dw.code != http.StatusOK && dw.code != 0 {
					b.Fatalf("%s: %d", w.query, dw.code)
				}
				n = dw.bytes
			}
			b.SetBytes(n)
			b.ReportMetric(float64(n)/1024, "KiB/page")
		})
	}
}
