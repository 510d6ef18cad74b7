package workload

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
)

// RunSampler samples every server every cfg.SampleEvery until ctx ends:
// one linearizable sample (default reads of /v1/nodes and /v1/bundles)
// and one ?stale sample, both recorded. Each server has its own loop, so
// a server that hangs does not delay the others' samples.
func RunSampler(ctx context.Context, cfg Config, h *History) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		h.AddSample(Sample{Error: err.Error()})
		return
	}
	var wg sync.WaitGroup
	for _, s := range cfg.Servers {
		c, err := api.New(s, append([]api.Option{api.WithMaxRetries(0)}, cfg.ClientOptions...)...)
		if err != nil {
			h.AddSample(Sample{Server: s, Error: err.Error()})
			continue
		}
		wg.Go(func() { sampleLoop(ctx, cfg, h, s, c) })
	}
	wg.Wait()
}

func sampleLoop(ctx context.Context, cfg Config, h *History, server string, c *api.Client) {
	t := time.NewTicker(cfg.SampleEvery)
	defer t.Stop()
	for {
		for _, stale := range []bool{false, true} {
			s := takeSample(ctx, cfg, h, server, c, stale)
			if ctx.Err() != nil {
				return // a sample cut short by the end of the run says nothing
			}
			h.AddSample(s)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// takeSample reads nodes then bundles; each list is one consistent
// snapshot of the server's state, the pair is not.
func takeSample(ctx context.Context, cfg Config, h *History, server string, c *api.Client, stale bool) Sample {
	var q *api.QueryOptions
	if stale {
		q = &api.QueryOptions{Stale: true}
	}
	s := Sample{Server: server, Stale: stale, Call: h.Now()}
	octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	nodes, nm, nerr := c.Nodes(octx, api.NodeFilter{}, q)
	var (
		bundles []api.Bundle
		bm      api.QueryMeta
		berr    error
	)
	if nerr == nil {
		bundles, bm, berr = c.Bundles(octx, api.BundleFilter{}, q)
	}
	s.Return = h.Now()
	if err := errors.Join(nerr, berr); err != nil {
		s.Error = err.Error()
		return s
	}
	s.Nodes, s.Bundles, s.Index = nodes, bundles, max(nm.Index, bm.Index)
	return s
}
