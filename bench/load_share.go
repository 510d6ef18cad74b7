package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The servers' amserver_http_expensive_share (httpapi/admission.go),
// sampled once a second: how far each held expensive reads back for
// writes. A server without the gauge (older code) has no samples.

// shareSamples are every server's samples, by server id.
type shareSamples struct {
	mu sync.Mutex
	by map[string][]float64
}

func sampleShares(ctx context.Context, c *loadCluster, out *shareSamples) {
	out.by = map[string][]float64{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, s := range c.servers {
			if v, ok := scrapeShare(ctx, s, c.mgmt); ok {
				out.mu.Lock()
				out.by[s.id] = append(out.by[s.id], v)
				out.mu.Unlock()
			}
		}
	}
}

func scrapeShare(ctx context.Context, s *loadServer, token string) (float64, bool) {
	v, err := scrapeMetrics(ctx, s.http+"/metrics", token, parseShare)
	return v, err == nil
}

// parseShare reads the expensive-request share gauge.
func parseShare(r io.Reader) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); metricIs(line, "amserver_http_expensive_share") {
			fields := strings.Fields(line)
			return strconv.ParseFloat(fields[len(fields)-1], 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no amserver_http_expensive_share on the page")
}

// String is each server's mean and lowest share, leader marked.
func (s *shareSamples) String(c *loadCluster, leader *loadServer) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, srv := range c.servers {
		v := s.by[srv.id]
		if len(v) == 0 {
			continue
		}
		sum, low := 0.0, v[0]
		for _, x := range v {
			sum += x
			low = min(low, x)
		}
		name := srv.id
		if srv == leader {
			name += " (leader)"
		}
		parts = append(parts, fmt.Sprintf("%s mean %.2f, lowest %.3f", name, sum/float64(len(v)), low))
	}
	if len(parts) == 0 {
		return "no share gauge"
	}
	return strings.Join(parts, "; ")
}
