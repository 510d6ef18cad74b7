package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/amserver/amserver/api"
)

// Every member counts the times it marks another suspect or dead
// (memberlist_msg_suspect, memberlist_msg_dead in /metrics). Nothing is
// killed during the load test, so every one of them is a false alarm: a
// suspicion that was refuted in time, or a live member declared down (its
// primaries would have failed over).

// gossipAlarms is the sum over servers of those two counters.
type gossipAlarms struct{ suspect, dead float64 }

func (a gossipAlarms) since(b gossipAlarms) gossipAlarms {
	return gossipAlarms{suspect: a.suspect - b.suspect, dead: a.dead - b.dead}
}

// alarms reads every server's counters; a server that does not answer
// makes the figure unknown (an error), not zero.
func (c *loadCluster) alarms(ctx context.Context) (gossipAlarms, error) {
	var sum gossipAlarms
	var errs []error
	for _, s := range c.servers {
		a, err := scrapeAlarms(ctx, s.http+"/metrics", c.mgmt)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.id, err))
			continue
		}
		sum.suspect += a.suspect
		sum.dead += a.dead
	}
	return sum, errors.Join(errs...)
}

func scrapeAlarms(ctx context.Context, url, token string) (gossipAlarms, error) {
	return scrapeMetrics(ctx, url, token, parseAlarms)
}

// scrapeMetrics reads a server's /metrics page (url) with parse.
func scrapeMetrics[T any](ctx context.Context, url, token string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return zero, err
	}
	req.Header.Set(api.HeaderToken, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return zero, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return zero, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parse(resp.Body)
}

// parseAlarms sums the suspect and dead counters of a Prometheus text page
// over their labels.
func parseAlarms(r io.Reader) (gossipAlarms, error) {
	var a gossipAlarms
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into *float64
		switch {
		case metricIs(line, "memberlist_msg_suspect"):
			into = &a.suspect
		case metricIs(line, "memberlist_msg_dead"):
			into = &a.dead
		default:
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return a, fmt.Errorf("metrics line %q: %w", line, err)
		}
		*into += v
	}
	return a, sc.Err()
}

// metricIs: line is a sample of name (not a comment, not a longer name).
func metricIs(line, name string) bool {
	rest, ok := strings.CutPrefix(line, name)
	return ok && (strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, " "))
}
