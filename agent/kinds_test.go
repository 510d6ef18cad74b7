package agent_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
	"github.com/amserver/amserver/worker"
)

// launchDriver runs nothing, like the none driver, and records each
// assignment's stops and the launches it was ensured with; a batch job
// (RunOnce) exits at once with the code in its launch's env EXIT.
type launchDriver struct {
	*worker.NoneDriver
	mu     sync.Mutex
	events map[string][]string // assignment → "stop" | "ensure V=<env V>"
	codes  map[string]int      // assignment → the EXIT of its last launch
}

func newLaunchDriver() *launchDriver {
	return &launchDriver{NoneDriver: worker.NewNoneDriver(), events: map[string][]string{}, codes: map[string]int{}}
}

// oneWorkerCluster is one server and one worker whose driver records what
// it is asked to run, the node ready, and a minute to work in.
func oneWorkerCluster(t *testing.T) (*api.Client, *launchDriver, context.Context) {
	t.Helper()
	// A rollout waits for each relaunched replica to run the settle window
	// (5 s by default): a short one keeps the rollout tests quick.
	settle := testcluster.Configure(func(_ int, cfg *agent.Config) { cfg.RolloutSettle = 200 * time.Millisecond })
	tc := testcluster.New(t, 1, testcluster.TCP(), testcluster.Graceful(), settle)
	drv := newLaunchDriver()
	tc.StartWorkers(1, func(wc *worker.Config) { wc.Driver = drv })
	c := tc.Client(tc.Servers()[0])
	waitReadyNodes(t, c, 1)
	return c, drv, ctxTimeout(t, 60*time.Second)
}

func (d *launchDriver) Ensure(ctx context.Context, a api.Assignment) (string, string) {
	env := map[string]string{}
	if a.Launch.Job != nil {
		env = a.Launch.Job.Env
	}
	if why := env["FAIL"]; why != "" {
		return api.JobFailed, why // a start that fails, as a missing image's does
	}
	code, _ := strconv.Atoi(env["EXIT"])
	d.mu.Lock()
	if a.Desired == api.DesiredRun {
		d.events[a.ID] = append(d.events[a.ID], "ensure V="+env["V"])
		d.codes[a.ID] = code
	}
	d.mu.Unlock()
	state, msg := d.NoneDriver.Ensure(ctx, a)
	if a.RunOnce && state == api.JobExited {
		msg = "exited " + strconv.Itoa(code)
	}
	return state, msg
}

func (d *launchDriver) Stop(ctx context.Context, id string) error {
	d.mu.Lock()
	d.events[id] = append(d.events[id], "stop")
	d.mu.Unlock()
	return d.NoneDriver.Stop(ctx, id)
}

// ExitCode implements worker.ExitCoder.
func (d *launchDriver) ExitCode(id string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	code, ok := d.codes[id]
	return code, ok
}

func (d *launchDriver) seen(id string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.events[id]...)
}

// restarted reports whether the driver stopped the job and then ensured it
// with the env value v.
func restarted(events []string, v string) bool {
	for i := 0; i+1 < len(events); i++ {
		if events[i] == "stop" && events[i+1] == "ensure "+v {
			return true
		}
	}
	return false
}

func envJob(v string) api.Job {
	return api.Job{Name: "j", Requirements: api.Requirements{Capacity: 1},
		Launch: api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: api.DriverNone, Env: map[string]string{"V": v}}}}
}

// TestInPlaceLaunchUpdateThroughCluster: a PUT that changes only the launch
// keeps the node, the reservation and the epoch; the worker stops the job
// and starts it with the new launch. A PUT that changes the requirements
// re-places it (a new epoch).
func TestInPlaceLaunchUpdateThroughCluster(t *testing.T) {
	// A rollout waits for each relaunched replica to run the settle window
	// (5 s by default): a short one keeps the rollout tests quick.
	settle := testcluster.Configure(func(_ int, cfg *agent.Config) { cfg.RolloutSettle = 200 * time.Millisecond })
	tc := testcluster.New(t, 1, testcluster.TCP(), testcluster.Graceful(), settle)
	drv := newLaunchDriver()
	tc.StartWorkers(2, func(wc *worker.Config) {
		if wc.NodeID == "worker-1" {
			wc.Driver = drv
		}
	})
	c := tc.Client(tc.Servers()[0])
	waitReadyNodes(t, c, 2)
	ctx := ctxTimeout(t, 60*time.Second)
	spec := api.BundleSpec{ID: "live", Pool: "default", Jobs: []api.Job{envJob("1")}}
	spec.Jobs[0].Constraints = []string{`node.id == "worker-1"`}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	before := bundleIs(t, ctx, c, 30*time.Second, "live", "placed and running", allRunning)
	node := before.Replicas[0].Jobs[0].NodeID
	nb, _, _ := c.Node(ctx, node, nil)
	spec.Jobs[0].Launch.Job.Env = map[string]string{"V": "2"}
	if _, err := c.ReplaceBundle(ctx, spec, 0); err != nil {
		t.Fatal(err)
	}
	after := bundleIs(t, ctx, c, 30*time.Second, "live", "generation 1, running", func(b *api.Bundle) bool {
		return b.Generation == 1 && allRunning(b)
	})
	if after.Epoch != before.Epoch || after.Replicas[0].Jobs[0].NodeID != node {
		t.Fatalf("moved: epoch %d→%d, node %s→%s", before.Epoch, after.Epoch, node, after.Replicas[0].Jobs[0].NodeID)
	}
	na, _, _ := c.Node(ctx, node, nil)
	if na.Reserved.Capacity != nb.Reserved.Capacity || na.Reserved.Capacity != 1 {
		t.Fatalf("reservation %v → %v", nb.Reserved, na.Reserved)
	}
	id := "live:0:j@" + node
	poll.Eventually(t, 20*time.Second, "the worker to restart the job with V=2", func() error {
		ev := drv.seen(id)
		return poll.Check(restarted(ev, "V=2"), "driver saw %v", ev)
	})
	spec.Jobs[0].Requirements.Capacity = 2
	if _, err := c.ReplaceBundle(ctx, spec, 0); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "live", "re-placed with a new epoch", func(b *api.Bundle) bool {
		return b.Epoch > after.Epoch && b.State == api.StatePlaced
	})
}

// TestBatchThroughCluster: a batch job whose process exits non-zero is
// restarted by the cluster up to its attempts and the bundle ends failed
// with the exit code and the worker's message; one that exits 0 ends
// complete with its reservation released, and is deleted ttlAfterFinished
// later. A job the driver cannot start reads failed, with the driver's
// reason, in the bundle.
func TestBatchThroughCluster(t *testing.T) {
	c, _, ctx := oneWorkerCluster(t)
	failing := api.BundleSpec{ID: "etl", Pool: "default", Kind: api.KindBatch, Jobs: []api.Job{envJob("1")},
		Restart: &api.RestartPolicy{Attempts: 2, Mode: api.RestartFail}}
	failing.Jobs[0].Launch.Job.Env["EXIT"] = "3"
	if _, err := c.CreateBundle(ctx, failing); err != nil {
		t.Fatal(err)
	}
	b := bundleIs(t, ctx, c, 30*time.Second, "etl", "failed after its attempts", func(b *api.Bundle) bool {
		return b.State == api.StateFailed
	})
	j := b.Replicas[0].Jobs[0]
	if j.ExitCode == nil || *j.ExitCode != 3 || j.Attempts != 2 || j.Status != api.JobExited || j.Message != "exited 3" || b.FinishTime.IsZero() {
		t.Fatalf("failed job %+v (exit %v), finished %v", j, j.ExitCode, b.FinishTime)
	}
	ok := api.BundleSpec{ID: "report", Pool: "default", Kind: api.KindBatch, Jobs: []api.Job{envJob("1")}, TTLAfterFinished: "1s"}
	if _, err := c.CreateBundle(ctx, ok); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "report", "complete", func(b *api.Bundle) bool { return b.State == api.StateComplete })
	n, _, _ := c.Node(ctx, "worker-1", nil)
	if n.Reserved.Capacity != 0 {
		t.Fatalf("finished bundles still hold %v", n.Reserved)
	}
	bundleGone(t, ctx, c, 30*time.Second, "report", "deleted after ttlAfterFinished")
	if s := bundleState(t, c, "etl"); s != api.StateFailed {
		t.Fatalf("the bundle without ttl is %s", s)
	}
	broken := api.BundleSpec{ID: "broken", Pool: "default", Jobs: []api.Job{envJob("1")}}
	const why = `image "amserver-does-not-exist:v9" is not on this node`
	broken.Jobs[0].Launch.Job.Env["FAIL"] = why
	if _, err := c.CreateBundle(ctx, broken); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "broken", "its job failed, saying why", func(b *api.Bundle) bool {
		j := b.Replicas[0].Jobs[0]
		return j.Status == api.JobFailed && j.Message == why
	})
}

// TestServiceFailoverThroughCluster: killing the worker under one replica
// of a service re-places that replica on a live node (no promotion, the
// epoch stays), within maxPerNode, and leaves the other replicas where
// they were; scaling down removes the highest replica.
func TestServiceFailoverThroughCluster(t *testing.T) {
	_, workers, c := devCluster(t, 1, 4)
	ctx := ctxTimeout(t, 90*time.Second)
	svc := api.BundleSpec{ID: "web", Pool: "default", Kind: api.KindService, Count: 3, MaxPerNode: 1,
		Jobs: []api.Job{{Name: "srv", Requirements: api.Requirements{Capacity: 1}}}}
	if _, err := c.CreateBundle(ctx, svc); err != nil {
		t.Fatal(err)
	}
	before := bundleIs(t, ctx, c, 30*time.Second, "web", "three replicas running", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && allRunning(b) && len(b.Replicas) == 3
	})
	victim := before.Replicas[1].Jobs[0].NodeID
	for _, w := range workers {
		if w.NodeID() == victim {
			if err := w.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	after := bundleIs(t, ctx, c, 45*time.Second, "web", "replica 1 re-placed", func(b *api.Bundle) bool {
		n := b.Replicas[1].Jobs[0].NodeID
		return b.State == api.StatePlaced && n != "" && n != victim
	})
	nodes := map[string]bool{}
	for i, r := range after.Replicas {
		if r.Role != api.RoleReplica {
			t.Fatalf("replica %d has role %s", i, r.Role)
		}
		n := r.Jobs[0].NodeID
		if nodes[n] {
			t.Fatalf("two replicas on %s despite maxPerNode 1: %+v", n, after.Replicas)
		}
		nodes[n] = true
		if i != 1 && n != before.Replicas[i].Jobs[0].NodeID {
			t.Fatalf("replica %d moved from %s to %s", i, before.Replicas[i].Jobs[0].NodeID, n)
		}
	}
	if after.Epoch != before.Epoch {
		t.Fatalf("epoch %d→%d", before.Epoch, after.Epoch)
	}
	svc.Count = 2
	if _, err := c.ReplaceBundle(ctx, svc, 0); err != nil {
		t.Fatal(err)
	}
	gone := after.Replicas[2].Jobs[0].NodeID
	poll.Eventually(t, 30*time.Second, "the third replica's reservation released", func() error {
		n, _, err := c.Node(ctx, gone, nil)
		if err != nil {
			return err
		}
		return poll.Check(n.Reserved.Capacity == 0, "node %s holds %v", gone, n.Reserved)
	})
	if b, _, _ := c.Bundle(ctx, "web", nil); len(b.Replicas) != 2 || b.Replicas[0].Jobs[0].NodeID != after.Replicas[0].Jobs[0].NodeID {
		t.Fatalf("after scaling down: %+v", b.Replicas)
	}
}

// TestServiceRolloutThroughCluster: a launch change on a service reaches
// every replica, each restarted where it runs with the new launch, one at
// a time (maxUnavailable 1), and the reservations stay.
func TestServiceRolloutThroughCluster(t *testing.T) {
	c, drv, ctx := oneWorkerCluster(t)
	svc := api.BundleSpec{ID: "web", Pool: "default", Kind: api.KindService, Count: 3, Jobs: []api.Job{envJob("1")}}
	if _, err := c.CreateBundle(ctx, svc); err != nil {
		t.Fatal(err)
	}
	before := bundleIs(t, ctx, c, 30*time.Second, "web", "three replicas running", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && allRunning(b)
	})
	svc.Jobs[0].Launch.Job.Env = map[string]string{"V": "2"}
	if _, err := c.ReplaceBundle(ctx, svc, 0); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := "web:" + strconv.Itoa(i) + ":j@worker-1"
		poll.Eventually(t, 30*time.Second, "replica "+strconv.Itoa(i)+" restarted with V=2", func() error {
			ev := drv.seen(id)
			return poll.Check(restarted(ev, "V=2"), "driver saw %v", ev)
		})
	}
	after := bundleIs(t, ctx, c, 30*time.Second, "web", "generation 1, all running", func(b *api.Bundle) bool {
		return b.Generation == 1 && allRunning(b)
	})
	if after.Epoch != before.Epoch || len(after.Replicas) != 3 {
		t.Fatalf("after the rollout: epoch %d→%d, %d replicas", before.Epoch, after.Epoch, len(after.Replicas))
	}
}

// TestServiceRolloutResumesAfterScaleDown: a rollout waiting on a replica
// that cannot be placed (maxPerNode 1, one node) goes on once a replace
// scales that replica away, with nothing else changing: the replace itself
// moves it (the API sets the command's Rollout).
func TestServiceRolloutResumesAfterScaleDown(t *testing.T) {
	c, drv, ctx := oneWorkerCluster(t)
	svc := api.BundleSpec{ID: "web", Pool: "default", Kind: api.KindService, Count: 2, MaxPerNode: 1, Jobs: []api.Job{envJob("1")}}
	if _, err := c.CreateBundle(ctx, svc); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "web", "one replica running, one unplaced", func(b *api.Bundle) bool {
		return len(b.Replicas) == 2 && len(b.Replicas[0].Jobs) == 1 && b.Replicas[0].Jobs[0].Status == api.JobRunning
	})
	svc.Jobs[0].Launch.Job.Env = map[string]string{"V": "2"}
	if _, err := c.ReplaceBundle(ctx, svc, 0); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "web", "generation 1, rolling out", func(b *api.Bundle) bool { return b.Generation == 1 && b.Rolling })
	svc.Count = 1
	if _, err := c.ReplaceBundle(ctx, svc, 0); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "replica 0 restarted with V=2", func() error {
		ev := drv.seen("web:0:j@worker-1")
		return poll.Check(restarted(ev, "V=2"), "driver saw %v", ev)
	})
	bundleIs(t, ctx, c, 30*time.Second, "web", "the rollout over", func(b *api.Bundle) bool { return !b.Rolling && allRunning(b) })
}

// TestServiceRolloutFixReachesBrokenReplica: a launch that fails takes
// down the replica the rollout reached, which holds maxUnavailable; the
// fix replaced after it reaches that replica at once (the API sets the
// commands' RelaunchUnavailable), so the rollout of the fix finishes.
func TestServiceRolloutFixReachesBrokenReplica(t *testing.T) {
	c, drv, ctx := oneWorkerCluster(t)
	svc := api.BundleSpec{ID: "web", Pool: "default", Kind: api.KindService, Count: 2, Jobs: []api.Job{envJob("1")}}
	if _, err := c.CreateBundle(ctx, svc); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "web", "two replicas running", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && allRunning(b)
	})
	svc.Jobs[0].Launch.Job.Env = map[string]string{"V": "2", "FAIL": "broken version"}
	if _, err := c.ReplaceBundle(ctx, svc, 0); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "web", "replica 0 failed on the broken version", func(b *api.Bundle) bool {
		return b.Rolling && b.Replicas[0].Jobs[0].Status == api.JobFailed
	})
	svc.Jobs[0].Launch.Job.Env = map[string]string{"V": "3"}
	if _, err := c.ReplaceBundle(ctx, svc, 0); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "web", "the fix rolled out", func(b *api.Bundle) bool {
		return b.Generation == 2 && !b.Rolling && allRunning(b)
	})
	for _, id := range []string{"web:0:j@worker-1", "web:1:j@worker-1"} {
		if ev := drv.seen(id); !restarted(ev, "V=3") {
			t.Fatalf("%s: the driver saw %v", id, ev)
		}
	}
}
