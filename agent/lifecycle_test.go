package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
	"github.com/amserver/amserver/worker"
)

// TestDrainEmptiesNodeAndCordonBlocks: a cordoned node takes no new work;
// draining a node moves every job off it, promoting backups first.
func TestDrainEmptiesNodeAndCordonBlocks(t *testing.T) {
	_, _, c := devCluster(t, 1, 3)
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
	poll.Eventually(t, 30*time.Second, "bundles placed on the only uncordoned node", func() error {
		for i := range 3 {
			b, _, err := c.Bundle(ctx, fmt.Sprintf("b%d", i), nil)
			if err != nil {
				return err
			}
			if b.State != api.StatePlaced || b.Replicas[0].Jobs[0].NodeID != "worker-3" {
				return fmt.Errorf("bundle %s is %s: %+v", b.ID, b.State, b.Replicas)
			}
		}
		return nil
	})
	for _, id := range []string{"worker-1", "worker-2"} {
		if _, err := c.Uncordon(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Drain(ctx, "worker-3"); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "drained node empty and every bundle placed elsewhere", func() error {
		n, _, err := c.Node(ctx, "worker-3", nil)
		if err != nil {
			return err
		}
		if n.Reserved.Capacity != 0 {
			return fmt.Errorf("worker-3 still reserves %+v", n.Reserved)
		}
		return statesAre(t, c, api.StatePlaced, "b0", "b1", "b2")
	})
}

// TestStartAtStopAt: a future startAt keeps a bundle scheduled until then;
// stopAt deletes it.
func TestStartAtStopAt(t *testing.T) {
	_, _, c := devCluster(t, 1, 2)
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
	poll.Eventually(t, 20*time.Second, "placed after startAt", func() error { return statesAre(t, c, api.StatePlaced, "timed") })
	bundleGone(t, ctx, c, 20*time.Second, "timed", "deleted after stopAt")
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
	tc := testcluster.New(t, 1, testcluster.TCP(), testcluster.Graceful(),
		testcluster.Configure(func(_ int, cfg *agent.Config) { cfg.DeleteTimeout = 2 * time.Second }))
	tc.StartWorkers(1, func(wc *worker.Config) { wc.Driver = &stuckDriver{NoneDriver: worker.NewNoneDriver()} })
	c := tc.Client(tc.Servers()[0])
	waitReadyNodes(t, c, 1)
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := c.CreateBundle(ctx, oneJob("quiet", 1)); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "quiet", "placed and running", allRunning)
	if _, err := c.DeleteBundle(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	// Deleting must wait for the worker's confirmation, which never comes:
	// a while passes on purpose, and the bundle must still be deleting.
	time.Sleep(500 * time.Millisecond)
	if s := bundleState(t, c, "quiet"); s != api.StateDeleting {
		t.Fatalf("deletion must wait for the worker: %s", s)
	}
	bundleGone(t, ctx, c, 20*time.Second, "quiet", "purged after the delete timeout")
	n, _, _ := c.Node(ctx, "worker-1", nil)
	if n.Reserved.Capacity != 0 {
		t.Fatalf("reservation survived the timeout: %+v", n.Reserved)
	}
}

// TestWorkerReregistersAfterDeregistration: a worker whose node record
// disappears (a restore, a forced deregistration applied while it ran)
// registers itself again. The API refuses to deregister a live worker's
// node for that reason, so the command goes to Raft directly.
func TestWorkerReregistersAfterDeregistration(t *testing.T) {
	tc, _, c := devCluster(t, 1, 1)
	ctx := ctxTimeout(t, 60*time.Second)
	if err := c.DeregisterNode(ctx, "worker-1", true); !api.IsCode(err, api.CodeConflict) {
		t.Fatalf("deregistering a live worker's node: %v, want a conflict", err)
	}
	req := &fsm.DeregisterNodeRequest{NodeID: "worker-1", Force: true, Now: time.Now().UnixNano()}
	if _, err := tc.Leader().Store().Apply(ctx, fsm.DeregisterNodeType, req); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 45*time.Second, "worker registered again", func() error {
		n, _, err := c.Node(ctx, "worker-1", nil)
		if err != nil {
			return err
		}
		return poll.Check(n.Status == api.NodeReady, "worker-1 is %s", n.Status)
	})
}
