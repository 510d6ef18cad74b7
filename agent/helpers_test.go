package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
	"github.com/amserver/amserver/worker"
)

// The agent's cluster tests run whole clusters built by testcluster and
// use only the package's exported API.

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func testPool(name string) api.Pool { return api.Pool{Name: name} }

func oneJob(id string, capacity float64) api.BundleSpec {
	return api.BundleSpec{ID: id, Pool: "default", Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: capacity}}}}
}

// devCluster is the dev cluster's shape: servers on TCP Raft with gossip,
// workers like the dev cluster's, stopped gracefully. It returns once
// every worker is ready, with a client of the first server.
func devCluster(t *testing.T, servers, workers int, opts ...testcluster.Option) (*testcluster.Cluster, []*worker.Worker, *api.Client) {
	t.Helper()
	c := testcluster.New(t, servers, append([]testcluster.Option{testcluster.TCP(), testcluster.Graceful()}, opts...)...)
	ws := c.StartWorkers(workers, nil)
	cl := c.Client(c.Servers()[0])
	waitReadyNodes(t, cl, workers)
	return c, ws, cl
}

func waitReadyNodes(t *testing.T, c *api.Client, want int) {
	t.Helper()
	poll.Eventually(t, 45*time.Second, "workers ready", func() error {
		nodes, _, err := c.Nodes(t.Context(), api.NodeFilter{Status: api.NodeReady}, nil)
		if err != nil {
			return err
		}
		return poll.Check(len(nodes) == want, "%d of %d nodes ready", len(nodes), want)
	})
}

// bundleIs waits until bundle id satisfies ok, and returns it.
func bundleIs(t *testing.T, ctx context.Context, c *api.Client, within time.Duration, id, what string, ok func(*api.Bundle) bool) *api.Bundle {
	t.Helper()
	var b *api.Bundle
	poll.Eventually(t, within, what, func() error {
		var err error
		if b, _, err = c.Bundle(ctx, id, nil); err != nil {
			return err
		}
		return poll.Check(ok(b), "bundle %s is %s: %+v", id, b.State, b.Replicas)
	})
	return b
}

// bundleGone waits until bundle id is purged.
func bundleGone(t *testing.T, ctx context.Context, c *api.Client, within time.Duration, id, what string) {
	t.Helper()
	poll.Eventually(t, within, what, func() error {
		b, _, err := c.Bundle(ctx, id, nil)
		if api.IsCode(err, api.CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("bundle %s is still %s", id, b.State)
	})
}

func bundleState(t *testing.T, c *api.Client, id string) string {
	b, _, err := c.Bundle(t.Context(), id, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	return b.State
}

// statesAre reports, as the error Eventually shows, the bundles whose
// state is not want.
func statesAre(t *testing.T, c *api.Client, want string, ids ...string) error {
	for _, id := range ids {
		if s := bundleState(t, c, id); s != want {
			return fmt.Errorf("bundle %s is %s, want %s", id, s, want)
		}
	}
	return nil
}

func allRunning(b *api.Bundle) bool {
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Status != api.JobRunning {
				return false
			}
		}
	}
	return len(b.Replicas) > 0
}
