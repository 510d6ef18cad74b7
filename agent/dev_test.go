package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// These tests are the dev cluster's own (what `amserver dev` starts), so
// they build it with StartDev; every other test builds through testcluster.

// startDev starts a dev cluster on free ports, stopped at cleanup.
func startDev(t *testing.T, servers, workers int) *agent.DevCluster {
	t.Helper()
	d, err := agent.StartDev(t.Context(), agent.DevConfig{HTTPAddr: "127.0.0.1:0", Servers: servers, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownDev(t, d) })
	return d
}

// shutdownDev stops a dev cluster within a bound, so a shutdown that hangs
// fails its test instead of stalling the whole package.
func shutdownDev(t *testing.T, d *agent.DevCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dev cluster shutdown did not finish in 30s: %v", err)
	}
}

// TestDevClusterThreeServers starts the embedded cluster the way `amserver
// dev --servers 3` does (real TCP Raft, real gossip, bootstrap-expect) and
// checks that every simulated worker registers and turns ready.
func TestDevClusterThreeServers(t *testing.T) {
	d := startDev(t, 3, 6)
	c, err := api.New(d.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 60*time.Second)
	poll.Eventually(t, 45*time.Second, "every worker ready, in 3 AZs", func() error {
		nodes, _, err := c.Nodes(ctx, api.NodeFilter{}, nil)
		if err != nil {
			return err
		}
		ready, azs := 0, map[string]bool{}
		for _, n := range nodes {
			if n.Status == api.NodeReady {
				ready++
				azs[n.Labels["az"]] = true
			}
		}
		return poll.Check(ready == 6 && len(azs) == 3, "%d ready, azs %v", ready, azs)
	})
	peers, err := c.Peers(ctx)
	if err != nil || len(peers) != 3 {
		t.Fatalf("raft peers %+v err %v", peers, err)
	}
}

// TestDevClusterPlacesAndDeletes: a bundle submitted to the dev cluster is
// placed with a backup in another AZ, its jobs report running, and deleting
// it stops them and removes it.
func TestDevClusterPlacesAndDeletes(t *testing.T) {
	d := startDev(t, 1, 6)
	c, _ := api.New(d.HTTPAddr())
	ctx := ctxTimeout(t, 60*time.Second)
	waitReadyNodes(t, c, 6)
	spec := api.BundleSpec{
		ID: "channel-1", Pool: "default",
		Resilience: &api.Resilience{SameNode: api.Forbid, SameAz: api.Forbid, SameCloud: api.Allow},
		Jobs: []api.Job{
			{Name: "enc", Requirements: api.Requirements{Capacity: 4, Cores: 2}},
			{Name: "pkg", Requirements: api.Requirements{Capacity: 1}, CoLocateWith: []string{"enc"}},
		},
	}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	b := bundleIs(t, ctx, c, 30*time.Second, "channel-1", "bundle placed and running", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && allRunning(b)
	})
	primary, backup := b.Replicas[0], b.Replicas[1]
	if primary.Jobs[0].NodeID != primary.Jobs[1].NodeID {
		t.Fatalf("co-located jobs split: %+v", primary.Jobs)
	}
	pn, _, _ := c.Node(ctx, primary.Jobs[0].NodeID, nil)
	bn, _, _ := c.Node(ctx, backup.Jobs[0].NodeID, nil)
	if pn.Labels["az"] == bn.Labels["az"] {
		t.Fatalf("backup in the primary's AZ %s", pn.Labels["az"])
	}
	if _, err := c.DeleteBundle(ctx, "channel-1"); err != nil {
		t.Fatal(err)
	}
	bundleGone(t, ctx, c, 30*time.Second, "channel-1", "bundle purged after its jobs stopped")
	nodes, _, _ := c.Nodes(ctx, api.NodeFilter{}, nil)
	for _, n := range nodes {
		if n.Reserved.Capacity != 0 || n.Assignments != 0 {
			t.Fatalf("node %s still holds %+v with %d assignments", n.ID, n.Reserved, n.Assignments)
		}
	}
}

// TestDevClusterNodeServices: an eager node service runs on every node of
// its pool that has what it consumes, and while it runs its node offers the
// capability it provides, which a bundle can then use.
func TestDevClusterNodeServices(t *testing.T) {
	d := startDev(t, 1, 6)
	c, _ := api.New(d.HTTPAddr())
	ctx := ctxTimeout(t, 60*time.Second)
	waitReadyNodes(t, c, 6)
	svc := api.NodeService{
		ID: "ptp", Pools: []string{"default"}, Launch: api.Launch{Driver: api.DriverNone},
		Consumes: []api.CapabilityRequest{{Name: "st2110-nic", Count: 1}},
		Provides: []api.Capability{{Name: "ptp-clock", Count: 4}},
	}
	if _, err := c.PutService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// Workers 1 and 4 (every third) have the NIC the service consumes.
	poll.Eventually(t, 30*time.Second, "service running on the NIC nodes only", func() error {
		nodes, _, err := c.Nodes(ctx, api.NodeFilter{}, nil)
		if err != nil {
			return err
		}
		var with []string
		for _, n := range nodes {
			for _, cp := range n.Capabilities {
				if cp.Name == "ptp-clock" {
					with = append(with, n.ID)
				}
			}
		}
		return poll.Check(len(with) == 2, "nodes offering ptp-clock: %v", with)
	})
	spec := api.BundleSpec{ID: "needs-ptp", Pool: "default", Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{
		Capacity: 1, Capabilities: []api.CapabilityRequest{{Name: "ptp-clock", Count: 1}}}}}}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "needs-ptp", "bundle placed on a node with the provided capability", func(b *api.Bundle) bool {
		return b.State == api.StatePlaced && (b.Replicas[0].Jobs[0].NodeID == "worker-1" || b.Replicas[0].Jobs[0].NodeID == "worker-4")
	})
}

// TestDevClusterRealDrivers: with real drivers (`amserver dev --driver
// real`) each worker offers the runtimes it detects and really runs what
// it is assigned: here an exec job, which sees its role in its
// environment, and which a delete stops.
func TestDevClusterRealDrivers(t *testing.T) {
	dir := t.TempDir()
	d, err := agent.StartDev(t.Context(), agent.DevConfig{HTTPAddr: "127.0.0.1:0", Workers: 2, RealDrivers: true, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownDev(t, d) })
	c, _ := api.New(d.HTTPAddr())
	ctx := ctxTimeout(t, 90*time.Second)
	waitReadyNodes(t, c, 2)
	n, _, err := c.Node(ctx, "worker-1", nil)
	if err != nil || !slices.Contains(n.Runtimes, api.RuntimeExec) || !slices.Contains(n.Runtimes, api.RuntimeWasm) {
		t.Fatalf("worker-1 offers %v (%v)", n.Runtimes, err)
	}
	out := filepath.Join(dir, "out")
	spec := api.BundleSpec{ID: "real-1", Pool: "default", Jobs: []api.Job{{
		Name: "enc", Requirements: api.Requirements{Capacity: 1},
		Launch: api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", `echo "$AMSERVER_ROLE" > ` + out + `; exec sleep 600`}},
	}}}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	bundleIs(t, ctx, c, 30*time.Second, "real-1", "the job running", allRunning)
	poll.Eventually(t, 10*time.Second, "the job wrote its role", func() error {
		b, err := os.ReadFile(out)
		return poll.Check(err == nil && string(b) == "primary\n", "%q %v", b, err)
	})
	if _, err := c.DeleteBundle(ctx, "real-1"); err != nil {
		t.Fatal(err)
	}
	bundleGone(t, ctx, c, 30*time.Second, "real-1", "the job stopped and the bundle purged")
}
