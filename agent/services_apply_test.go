package agent_test

import (
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// TestServiceApplyThroughCluster: applying a node service again with a new
// launch restarts its running instance with it where it runs (a new
// assignment generation); with new requirements the instance is stopped
// and placed again with the new grant.
func TestServiceApplyThroughCluster(t *testing.T) {
	c, drv, ctx := oneWorkerCluster(t)
	svc := api.NodeService{ID: "sidecar", Pools: []string{"default"}, Requirements: api.ServiceRequirements{Capacity: 0.5},
		Launch: api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: api.DriverNone, Env: map[string]string{"V": "1"}}}}
	if _, err := c.PutService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	id := "svc:sidecar@worker-1"
	instance := func(what string, ok func(a api.Assignment) bool) {
		t.Helper()
		poll.Eventually(t, 30*time.Second, what, func() error {
			as, _, err := c.Assignments(ctx, "worker-1", nil)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(as, func(a api.Assignment) bool { return a.ID == id })
			if i < 0 {
				return poll.Check(false, "no %s among %d assignments", id, len(as))
			}
			return poll.Check(ok(as[i]), "%s: %+v", id, as[i])
		})
	}
	running := func(a api.Assignment) bool { return a.Desired == api.DesiredRun && a.Status == api.JobRunning }
	instance("the instance running", running)

	svc.Launch.Job.Env = map[string]string{"V": "2"}
	if _, err := c.PutService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	instance("the instance at generation 1 with V=2, running", func(a api.Assignment) bool {
		return a.Generation == 1 && a.Launch.Job != nil && a.Launch.Job.Env["V"] == "2" && running(a)
	})
	poll.Eventually(t, 20*time.Second, "the worker to restart the instance with V=2", func() error {
		ev := drv.seen(id)
		return poll.Check(restarted(ev, "V=2"), "driver saw %v", ev)
	})

	svc.Requirements.Capacity = 1
	if _, err := c.PutService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	instance("the instance placed again with the new grant, running", func(a api.Assignment) bool {
		return a.Capacity == 1 && running(a)
	})
}
