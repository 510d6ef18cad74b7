package agent

import (
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// TestDevClusterThreeServers starts the embedded cluster the way `amserver
// dev --servers 3` does (real TCP Raft, real gossip, bootstrap-expect) and
// checks that every simulated worker registers and turns ready.
func TestDevClusterThreeServers(t *testing.T) {
	d, err := StartDev(t.Context(), DevConfig{HTTPAddr: "127.0.0.1:0", Servers: 3, Workers: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownDev(t, d) })
	c, err := api.New(d.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 60*time.Second)
	deadline := time.Now().Add(45 * time.Second)
	for {
		nodes, _, err := c.Nodes(ctx, api.NodeFilter{}, nil)
		ready, azs := 0, map[string]bool{}
		for _, n := range nodes {
			if n.Status == api.NodeReady {
				ready++
				azs[n.Labels["az"]] = true
			}
		}
		if err == nil && ready == 6 && len(azs) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers not ready: %d ready, azs %v, err %v", ready, azs, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	peers, err := c.Peers(ctx)
	if err != nil || len(peers) != 3 {
		t.Fatalf("raft peers %+v err %v", peers, err)
	}
}

// TestDevClusterPlacesAndDeletes: a bundle submitted to the dev cluster is
// placed with a backup in another AZ, its jobs report running, and deleting
// it stops them and removes it.
func TestDevClusterPlacesAndDeletes(t *testing.T) {
	d, err := StartDev(t.Context(), DevConfig{HTTPAddr: "127.0.0.1:0", Servers: 1, Workers: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownDev(t, d) })
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
	var b *api.Bundle
	eventually(t, 30*time.Second, "bundle placed and running", func() bool {
		b, _, err = c.Bundle(ctx, "channel-1", nil)
		return err == nil && b.State == api.StatePlaced && allRunning(b)
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
	eventually(t, 30*time.Second, "bundle purged after its jobs stopped", func() bool {
		_, _, err := c.Bundle(ctx, "channel-1", nil)
		return api.IsCode(err, api.CodeNotFound)
	})
	nodes, _, _ := c.Nodes(ctx, api.NodeFilter{}, nil)
	for _, n := range nodes {
		if n.Reserved.Capacity != 0 || n.Assignments != 0 {
			t.Fatalf("node %s still holds %+v with %d assignments", n.ID, n.Reserved, n.Assignments)
		}
	}
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

func waitReadyNodes(t *testing.T, c *api.Client, want int) {
	t.Helper()
	eventually(t, 45*time.Second, "workers ready", func() bool {
		nodes, _, err := c.Nodes(t.Context(), api.NodeFilter{Status: api.NodeReady}, nil)
		return err == nil && len(nodes) == want
	})
}

func eventually(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDevClusterNodeServices: an eager node service runs on every node of
// its pool that has what it consumes, and while it runs its node offers the
// capability it provides, which a bundle can then use.
func TestDevClusterNodeServices(t *testing.T) {
	d, err := StartDev(t.Context(), DevConfig{HTTPAddr: "127.0.0.1:0", Servers: 1, Workers: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownDev(t, d) })
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
	eventually(t, 30*time.Second, "service running on the NIC nodes only", func() bool {
		nodes, _, err := c.Nodes(ctx, api.NodeFilter{}, nil)
		if err != nil {
			return false
		}
		with := 0
		for _, n := range nodes {
			for _, cp := range n.Capabilities {
				if cp.Name == "ptp-clock" {
					with++
				}
			}
		}
		return with == 2
	})
	spec := api.BundleSpec{ID: "needs-ptp", Pool: "default", Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{
		Capacity: 1, Capabilities: []api.CapabilityRequest{{Name: "ptp-clock", Count: 1}}}}}}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "bundle placed on a node with the provided capability", func() bool {
		b, _, err := c.Bundle(ctx, "needs-ptp", nil)
		return err == nil && b.State == api.StatePlaced && (b.Replicas[0].Jobs[0].NodeID == "worker-1" || b.Replicas[0].Jobs[0].NodeID == "worker-4")
	})
}
