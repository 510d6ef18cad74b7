package agent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/testcluster"
)

// BenchmarkBundleCreatesHTTP measures acknowledged bundle creates per second
// through the HTTP API of a 3-server loopback cluster (fsync on), sent to
// every server in turn, at concurrency 1, 16 and 64.
func BenchmarkBundleCreatesHTTP(b *testing.B) {
	tc := testcluster.New(b, 3, testcluster.TCP())
	servers, leader := tc.Servers(), tc.Leader()
	c := tc.Client(leader)
	if _, err := c.PutPool(context.Background(), api.Pool{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			clients := make([]*api.Client, len(servers))
			for i, s := range servers {
				clients[i], _ = api.New(s.HTTPAddr(), api.WithHTTPClient(benchHTTPClient(conc)))
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range conc {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						id := fmt.Sprintf("b%09d", seq.Add(1))
						spec := api.BundleSpec{ID: id, Pool: "bench", Jobs: []api.Job{{Name: "enc", Requirements: api.Requirements{Capacity: 0.5}}}}
						if _, err := clients[w%len(clients)].CreateBundle(context.Background(), spec); err != nil {
							b.Error(err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}

func benchHTTPClient(conc int) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}
