package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// convergePoll is the pause between two convergence polls; convergeRequest
// bounds each request so one hung server cannot eat the whole budget.
var (
	convergePoll    = 250 * time.Millisecond
	convergeRequest = 2 * time.Second
)

// Converge polls, after a heal, until (a) every bundle not being deleted
// is placed or degraded, per a linearizable GET /v1/bundles on any server
// that answers, and (b) every server reports the same state digest at the
// same index. It passes when both hold before within ends, and otherwise
// reports what was still off at the last poll.
func Converge(ctx context.Context, servers []string, within time.Duration, opts ...api.Option) Result {
	c := newCollector("converge")
	if len(servers) == 0 {
		c.addf("no servers to check")
		return c.result()
	}
	cls := make([]*api.Client, len(servers))
	for i, s := range servers {
		cl, err := api.New(s, append([]api.Option{api.WithMaxRetries(0)}, opts...)...)
		if err != nil {
			c.addf("server %s: %v", s, err)
			return c.result()
		}
		cls[i] = cl
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last []string // what the last poll that ran to completion found off
	for {
		off, checked := convergeOnce(ctx, servers, cls)
		if len(off) == 0 {
			c.checked = checked
			res := c.result()
			res.TookMs = max(time.Since(start).Milliseconds(), 1)
			return res
		}
		// A poll cut short by the deadline only says "deadline exceeded";
		// the poll before it says what was really still off.
		if ctx.Err() == nil || last == nil {
			last, c.checked = off, checked
		}
		t := time.NewTimer(convergePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			c.addf("not converged within %s", within)
			for _, o := range last {
				c.addf("%s", o)
			}
			return c.result()
		case <-t.C:
		}
	}
}

// convergeOnce returns what is still off, and how many bundles and
// servers it examined.
func convergeOnce(ctx context.Context, servers []string, cls []*api.Client) ([]string, int) {
	bundles, off := readBundles(ctx, servers, cls)
	checked := len(bundles) + len(servers)
	for _, b := range bundles {
		switch b.State {
		case api.StateDeleting, api.StatePlaced, api.StateDegraded:
		default:
			off = append(off, fmt.Sprintf("bundle %s is %s: %s", b.ID, b.State, explainString(b.Explain)))
		}
	}
	return append(off, compareDigests(ctx, servers, cls)...), checked
}

// readBundles does a linearizable read on the first server that answers.
func readBundles(ctx context.Context, servers []string, cls []*api.Client) ([]api.Bundle, []string) {
	var errs []string
	for i, cl := range cls {
		rctx, cancel := context.WithTimeout(ctx, convergeRequest)
		bundles, _, err := cl.Bundles(rctx, api.BundleFilter{}, nil)
		cancel()
		if err == nil {
			return bundles, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", servers[i], err))
	}
	return nil, []string{"no server answered a linearizable GET /v1/bundles: " + strings.Join(errs, "; ")}
}

// compareDigests asks every server for its own state digest; all must
// answer with one index and one digest.
func compareDigests(ctx context.Context, servers []string, cls []*api.Client) []string {
	var off []string
	views := map[string][]string{} // "index/digest" → servers
	for i, cl := range cls {
		rctx, cancel := context.WithTimeout(ctx, convergeRequest)
		d, err := cl.StateDigest(rctx)
		cancel()
		if err != nil {
			off = append(off, fmt.Sprintf("server %s: digest: %v", servers[i], err))
			continue
		}
		key := fmt.Sprintf("index %d digest %s", d.Index, d.Digest)
		views[key] = append(views[key], fmt.Sprintf("%s (%s)", servers[i], d.ServerID))
	}
	if len(views) > 1 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(views)) {
			parts = append(parts, fmt.Sprintf("%s: %s", strings.Join(views[k], ", "), k))
		}
		off = append(off, "servers differ: "+strings.Join(parts, " | "))
	}
	return off
}

func explainString(e *api.Explain) string {
	if e == nil {
		return "no explain"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e.Filtered)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, e.Filtered[k]))
	}
	s := fmt.Sprintf("%d nodes evaluated, filtered {%s}", e.NodesEvaluated, strings.Join(parts, ", "))
	if m := e.NearestMiss; m != nil {
		s += fmt.Sprintf(", nearest miss %s at %s: %s", m.NodeID, m.Stage, m.Detail)
	}
	return s
}
