package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The leader's own view of the creates (amserver_http_request_duration_seconds
// for POST /v1/bundles): how many it answered, and how many took longer
// than 100 ms there. Beside the clients' p99 it tells a slow server from a
// client process that was itself kept off the CPU.

// serverWrites counts creates answered at a server, and those over 100 ms.
type serverWrites struct{ total, slow float64 }

func (a serverWrites) since(b serverWrites) serverWrites {
	return serverWrites{total: a.total - b.total, slow: a.slow - b.slow}
}

func scrapeServerWrites(ctx context.Context, s *loadServer, token string) (serverWrites, error) {
	return scrapeMetrics(ctx, s.http+"/metrics", token, parseServerWrites)
}

// parseServerWrites reads the create route's buckets at 0.1 s and +Inf.
func parseServerWrites(r io.Reader) (serverWrites, error) {
	var within, all float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !metricIs(line, "amserver_http_request_duration_seconds_bucket") ||
			!strings.Contains(line, `method="POST"`) || !strings.Contains(line, `route="/v1/bundles"`) {
			continue
		}
		var into *float64
		switch {
		case strings.Contains(line, `le="0.1"`):
			into = &within
		case strings.Contains(line, `le="+Inf"`):
			into = &all
		default:
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return serverWrites{}, fmt.Errorf("metrics line %q: %w", line, err)
		}
		*into = v
	}
	return serverWrites{total: all, slow: all - within}, sc.Err()
}
