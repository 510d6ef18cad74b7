package workload_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/check"
	"github.com/amserver/amserver/e2e/workload"
)

// TestWorkloadOnDevCluster runs the whole workload against an in-process
// 3-server cluster without faults: every checker must pass.
func TestWorkloadOnDevCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server cluster")
	}
	d, err := agent.StartDev(t.Context(), agent.DevConfig{HTTPAddr: "127.0.0.1:0", Servers: 3, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Logf("shutdown: %v", err)
		}
	})
	var servers []string
	for _, s := range d.Servers {
		servers = append(servers, s.HTTPAddr())
	}
	waitReadyNodes(t, servers[0], 3)
	// Dev workers register into pool "default".
	cfg := workload.Config{Servers: servers, Pool: "default", Seed: 1, Backup: true, OpTimeout: 5 * time.Second}
	setupCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := workload.Setup(setupCtx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := workload.Setup(setupCtx, cfg); err != nil {
		t.Fatalf("second Setup: %v", err)
	}
	h := runFor(t, cfg, 2*time.Second, 2*len(servers))
	assertEveryKindOK(t, h.Ops())
	final := finalBundles(t, servers[0])
	lin, viz := check.Linearizable(h.Ops(), 10*time.Second)
	results := []check.Result{
		lin, check.UniqueCreates(h.Ops(), final), check.Placement(h.Samples()), check.MonotonicIndex(h.Ops()),
		check.Converge(t.Context(), servers, 10*time.Second),
	}
	for _, r := range results {
		t.Logf("%s: ok=%v checked=%d", r.Name, r.OK, r.Checked)
		if !r.OK || r.Checked == 0 {
			t.Errorf("%s: ok=%v checked=%d violations %q", r.Name, r.OK, r.Checked, r.Violations)
		}
	}
	if viz != nil {
		t.Errorf("visualization returned for a passing history")
	}
	if len(h.Samples()) < 2*len(servers) {
		t.Errorf("only %d samples", len(h.Samples()))
	}
}

// runFor runs the workload and the sampler for at least d and until the
// history holds minSamples state samples and an acknowledged op of every
// kind: a loaded machine gets less done in the same time (the checks need
// the evidence, not the seconds). It gives up after a minute.
func runFor(t *testing.T, cfg workload.Config, d time.Duration, minSamples int) *workload.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	h := workload.NewHistory()
	enough := func() bool {
		ok := map[workload.Kind]bool{}
		for _, op := range h.Ops() {
			ok[op.Kind] = ok[op.Kind] || op.Outcome == workload.OK
		}
		return len(h.Samples()) >= minSamples &&
			ok[workload.KindRead] && ok[workload.KindWrite] && ok[workload.KindCAS] && ok[workload.KindCreate]
	}
	var wg sync.WaitGroup
	wg.Go(func() { workload.RunSampler(ctx, cfg, h) })
	wg.Go(func() {
		floor := time.After(d)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case <-floor:
				floor = nil
			case <-tick.C:
			case <-ctx.Done():
			}
			if floor == nil && enough() {
				cancel()
			}
		}
	})
	if err := workload.Run(ctx, cfg, h); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return h
}

func assertEveryKindOK(t *testing.T, ops []workload.Op) {
	t.Helper()
	ok := map[workload.Kind]int{}
	failed := map[string]int{}
	for _, op := range ops {
		if op.Outcome == workload.OK {
			ok[op.Kind]++
		}
		if op.Outcome == workload.Fail {
			failed[string(op.Kind)+":"+op.Code]++
		}
		if op.Outcome == workload.Unknown {
			t.Errorf("unknown outcome without faults: %+v", op)
		}
	}
	for _, k := range []workload.Kind{workload.KindRead, workload.KindWrite, workload.KindCAS, workload.KindCreate} {
		if ok[k] == 0 {
			t.Errorf("no ok %s op among %d ops (%v)", k, len(ops), ok)
		}
	}
	t.Logf("%d ops, ok by kind %v, failed by kind and code %v", len(ops), ok, failed)
}

func finalBundles(t *testing.T, addr string) []api.Bundle {
	t.Helper()
	c, err := api.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	bundles, _, err := c.Bundles(t.Context(), api.BundleFilter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bundles
}

func waitReadyNodes(t *testing.T, addr string, want int) {
	t.Helper()
	c, err := api.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		nodes, _, err := c.Nodes(t.Context(), api.NodeFilter{Status: api.NodeReady}, nil)
		if err == nil && len(nodes) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes ready, want %d (err %v)", len(nodes), want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
