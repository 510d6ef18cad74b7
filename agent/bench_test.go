package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
)

// startTCPCluster starts n servers with real TCP Raft transports, bolt
// stores on disk and gossip on loopback, bootstrapped through gossip.
func startTCPCluster(tb testing.TB, n int) []*Server {
	tb.Helper()
	dir := tb.TempDir()
	var servers []*Server
	var join []string
	for i := range n {
		cfg := Config{
			NodeID: fmt.Sprintf("s%d", i+1), DataDir: filepath.Join(dir, fmt.Sprint(i)),
			HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", BootstrapExpect: n, Join: join,
		}
		cfg.Gossip = gossip.DefaultConfig()
		cfg.Gossip.BindAddr, cfg.Gossip.BindPort = "127.0.0.1", 0
		s, err := NewServer(cfg, Deps{})
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			tb.Fatal(err)
		}
		servers = append(servers, s)
		join = append(join, s.gossip.LocalAddr())
	}
	tb.Cleanup(func() {
		for _, s := range servers {
			_ = s.Kill()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.store.IsLeader() && s.store.Ready() {
				return servers
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatal("no leader")
	return nil
}

// BenchmarkBundleCreatesHTTP measures acknowledged bundle creates per second
// through the HTTP API of a 3-server loopback cluster (fsync on), sent to
// every server in turn, at concurrency 1, 16 and 64.
func BenchmarkBundleCreatesHTTP(b *testing.B) {
	servers := startTCPCluster(b, 3)
	leader := servers[0]
	for _, s := range servers {
		if s.store.IsLeader() {
			leader = s
		}
	}
	c, _ := api.New(leader.HTTPAddr())
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
