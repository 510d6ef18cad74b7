package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/worker"
)

func startDev(t *testing.T, servers, workers int, mutate func(*DevConfig)) (*DevCluster, *api.Client) {
	t.Helper()
	cfg := DevConfig{HTTPAddr: "127.0.0.1:0", Servers: servers, Workers: workers}
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := StartDev(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownDev(t, d) })
	c, _ := api.New(d.HTTPAddr())
	waitReadyNodes(t, c, workers)
	return d, c
}

func oneJob(id string, capacity float64) api.BundleSpec {
	return api.BundleSpec{ID: id, Pool: "default", Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: capacity}}}}
}

func bundleState(t *testing.T, c *api.Client, id string) string {
	b, _, err := c.Bundle(t.Context(), id, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	return b.State
}

// TestDrainEmptiesNodeAndCordonBlocks: a cordoned node takes no new work;
// draining a node moves every job off it, promoting backups first.
func TestDrainEmptiesNodeAndCordonBlocks(t *testing.T) {
	_, c := startDev(t, 1, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	for _, id := range []string{"worker-1", "worker-2"} {
		if _, err := c.Cordon(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := c.CreateBundle(ctx, oneJob(fmt.Sprintf("b%d", i), 2)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "bundles placed on the only uncordoned node", func() bool {
		for i := range 3 {
			b, _, err := c.Bundle(ctx, fmt.Sprintf("b%d", i), nil)
			if err != nil || b.State != api.StatePlaced || b.Replicas[0].Jobs[0].NodeID != "worker-3" {
				return false
			}
		}
		return true
	})
	for _, id := range []string{"worker-1", "worker-2"} {
		if _, err := c.Uncordon(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Drain(ctx, "worker-3"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "drained node empty and every bundle placed elsewhere", func() bool {
		n, _, err := c.Node(ctx, "worker-3", nil)
		if err != nil || n.Reserved.Capacity != 0 {
			return false
		}
		for i := range 3 {
			if bundleState(t, c, fmt.Sprintf("b%d", i)) != api.StatePlaced {
				return false
			}
		}
		return true
	})
}

// TestStartAtStopAt: a future startAt keeps a bundle scheduled until then;
// stopAt deletes it.
func TestStartAtStopAt(t *testing.T) {
	_, c := startDev(t, 1, 2, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	spec := oneJob("timed", 1)
	start := time.Now().Add(2 * time.Second)
	spec.StartAt, spec.StopAt = start.UTC().Format(time.RFC3339Nano), start.Add(2*time.Second).UTC().Format(time.RFC3339Nano)
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if s := bundleState(t, c, "timed"); s != api.StateScheduled && time.Now().Before(start) {
		t.Fatalf("before startAt: %s", s)
	}
	eventually(t, 20*time.Second, "placed after startAt", func() bool { return bundleState(t, c, "timed") == api.StatePlaced })
	eventually(t, 20*time.Second, "deleted after stopAt", func() bool {
		_, _, err := c.Bundle(ctx, "timed", nil)
		return api.IsCode(err, api.CodeNotFound)
	})
}

// stuckDriver runs tasks but never confirms a stop, like a worker whose
// workload ignores signals: the node stays alive in gossip but silent.
type stuckDriver struct{ *worker.NoneDriver }

func (d *stuckDriver) Ensure(ctx context.Context, a api.Assignment) (string, string) {
	if a.Desired != "run" {
		return "", ""
	}
	return d.NoneDriver.Ensure(ctx, a)
}

// TestDeleteTimeoutReleasesSilentNode: a bundle on a worker that never
// confirms the stop is purged after the delete timeout, and its reservation
// released.
func TestDeleteTimeoutReleasesSilentNode(t *testing.T) {
	_, c := startDev(t, 1, 1, func(cfg *DevConfig) {
		cfg.DeleteTimeout = 2 * time.Second
		cfg.Driver = func() worker.Driver { return &stuckDriver{NoneDriver: worker.NewNoneDriver()} }
	})
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := c.CreateBundle(ctx, oneJob("quiet", 1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "placed and running", func() bool {
		b, _, err := c.Bundle(ctx, "quiet", nil)
		return err == nil && allRunning(b)
	})
	if _, err := c.DeleteBundle(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if s := bundleState(t, c, "quiet"); s != api.StateDeleting {
		t.Fatalf("deletion must wait for the worker: %s", s)
	}
	eventually(t, 20*time.Second, "purged after the delete timeout", func() bool {
		_, _, err := c.Bundle(ctx, "quiet", nil)
		return api.IsCode(err, api.CodeNotFound)
	})
	n, _, _ := c.Node(ctx, "worker-1", nil)
	if n.Reserved.Capacity != 0 {
		t.Fatalf("reservation survived the timeout: %+v", n.Reserved)
	}
}

// shutdownDev stops a dev cluster within a bound, so a shutdown that hangs
// fails its test instead of stalling the whole package.
func shutdownDev(t *testing.T, d *DevCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dev cluster shutdown did not finish in 30s: %v", err)
	}
}

// TestWorkerReregistersAfterDeregistration: a worker whose node record
// disappears (forced deregistration, a restore) registers itself again.
func TestWorkerReregistersAfterDeregistration(t *testing.T) {
	_, c := startDev(t, 1, 1, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	if err := c.DeregisterNode(ctx, "worker-1", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 45*time.Second, "worker registered again", func() bool {
		n, _, err := c.Node(ctx, "worker-1", nil)
		return err == nil && n.Status == api.NodeReady
	})
}
