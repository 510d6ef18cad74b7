package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// TestElasticPools runs elastic pools on an in-process cluster of three
// servers whose exec provisioner starts real `amserver agent --worker`
// processes. The binary is built once for all the subtests.
func TestElasticPools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds amserver and starts real worker processes")
	}
	bin := buildAmserver(t)
	t.Run("ProvisionsOnceThenPlaces", func(t *testing.T) { testProvisionsOnce(t, bin) })
	t.Run("LeaderFailoverProvisionsOnce", func(t *testing.T) { testFailoverProvisionsOnce(t, bin) })
	t.Run("CapsNeverExceeded", func(t *testing.T) { testCapsNeverExceeded(t, bin) })
	t.Run("PrunesUnregisteredSpawn", func(t *testing.T) { testPrunesUnregistered(t, bin) })
	t.Run("ScalesDownBeyondWarm", func(t *testing.T) { testScalesDown(t, bin) })
	t.Run("StuckProvisionerBlocksNoOtherPool", func(t *testing.T) { testStuckProvisioner(t, bin) })
}

// An unplaceable bundle causes exactly one provision, of the smallest
// instance type that fits it, and lands on the new node.
func testProvisionsOnce(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 0, nil)
	c := r.client()
	r.pool(api.Pool{Name: "e"})
	r.submit(c, "b1", "e", 3)
	var node string
	eventually(t, 45*time.Second, "b1 placed on a provisioned node", func() bool {
		node = r.placedOn(c, "b1")
		return node != ""
	})
	created := r.created()
	if len(created) != 1 || strings.Fields(created[0])[1] != node {
		t.Fatalf("provisioned %v, want exactly the node b1 sits on (%s)", created, node)
	}
	if ids := r.createIDs(); len(ids) != 1 {
		t.Fatalf("create calls carried request ids %v, want one", ids)
	}
	for _, call := range r.logLines("calls.log") {
		if !strings.HasSuffix(call, " big") {
			t.Fatalf("call %q: want the smallest type that fits capacity 3 (big)", call)
		}
	}
	ps := r.status(c, "e")
	if ps.Counts[api.LifecycleReady] != 1 || len(ps.Nodes) != 1 || ps.Nodes[0].InstanceType != "big" || ps.Provisioned != 1 {
		t.Fatalf("pool status %+v", ps)
	}
}

// A leader failover between the provisioner call and the worker's
// registration does not provision twice: the new leader repeats the call
// with the same request id, which the provisioner treats as done.
func testFailoverProvisionsOnce(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 0, nil)
	r.touch("hold")
	c := r.client()
	r.pool(api.Pool{Name: "e"})
	r.submit(c, "b1", "e", 3)
	eventually(t, 30*time.Second, "the provisioner called", func() bool { return len(r.created()) == 1 })
	old := r.leader()
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	r.leader(old)
	c = r.client(old)
	eventually(t, 30*time.Second, "the new leader repeats the create", func() bool {
		n := 0
		for _, l := range r.logLines("calls.log") {
			if strings.HasPrefix(l, "create ") {
				n++
			}
		}
		return n >= 2
	})
	if ps := r.status(c, "e"); ps.Counts[api.LifecycleSpawning] != 1 {
		t.Fatalf("after failover: %+v, want one spawning node", ps.Counts)
	}
	if err := os.Remove(filepath.Join(r.dir, "hold")); err != nil {
		t.Fatal(err)
	}
	var node string
	eventually(t, 45*time.Second, "b1 placed", func() bool {
		node = r.placedOn(c, "b1")
		return node != ""
	})
	if created, ids := r.created(), r.createIDs(); len(created) != 1 || len(ids) != 1 || strings.Fields(created[0])[1] != node {
		t.Fatalf("provisioned %v with request ids %v; want one node, the one b1 is on (%s)", created, ids, node)
	}
}

// Concurrent demand beyond a pool's maxNodes, and beyond the cluster's cap,
// leaves bundles unplaceable with an explanation naming the cap; the caps
// are never exceeded.
func testCapsNeverExceeded(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 0, func(c *Config) { c.Elastic.MaxProvisionedNodes = 3 })
	c := r.client()
	r.pool(api.Pool{Name: "a", MaxNodes: 2})
	r.pool(api.Pool{Name: "b"})
	r.submitConcurrently(c, "a", 3)
	r.waitCapped(c, "a", 2, fsm.StagePoolMaxNodes, "pool a at maxNodes 2")
	r.submitConcurrently(c, "b", 2)
	r.waitCapped(c, "b", 1, fsm.StageMaxProvisionedNodes, "cluster at max provisioned nodes 3")
	if created := r.created(); len(created) != 3 {
		t.Fatalf("provisioned %d nodes under a cap of 3: %v", len(created), created)
	}
}

func (r *elasticRig) submitConcurrently(c *api.Client, pool string, n int) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { r.submit(c, fmt.Sprintf("%s%d", pool, i), pool, 3) })
	}
	wg.Wait()
}

// waitCapped waits until placed of the pool's bundles are placed and the
// rest explain the cap, checking the pool never holds more than its bound.
func (r *elasticRig) waitCapped(c *api.Client, pool string, placed int, stage, detail string) {
	r.t.Helper()
	eventually(r.t, 60*time.Second, fmt.Sprintf("%d bundles of %s placed, the rest stopped by %s", placed, pool, stage), func() bool {
		if ps := r.status(c, pool); ps.MaxNodes > 0 && len(ps.Nodes) > ps.MaxNodes || ps.Provisioned > 3 {
			r.t.Fatalf("cap exceeded: %+v", ps)
		}
		bundles, _, err := c.Bundles(r.t.Context(), api.BundleFilter{Pool: pool}, nil)
		if err != nil {
			return false
		}
		ok, capped := 0, 0
		for _, b := range bundles {
			switch {
			case b.State == api.StatePlaced:
				ok++
			case b.State == api.StateUnplaceable && b.Explain != nil && b.Explain.NearestMiss != nil &&
				b.Explain.NearestMiss.Stage == stage && strings.Contains(b.Explain.NearestMiss.Detail, detail):
				capped++
			}
		}
		return ok == placed && capped == len(bundles)-placed
	})
}

// A spawn whose node never registers is given up after spawnTimeout (with
// an event and a delete call) and its demand provisioned again.
func testPrunesUnregistered(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 0, nil)
	r.touch("lose-next")
	c := r.client()
	r.pool(api.Pool{Name: "e", SpawnTimeout: "3s"})
	r.submit(c, "b1", "e", 3)
	var node string
	eventually(t, 60*time.Second, "b1 placed on the second node", func() bool {
		node = r.placedOn(c, "b1")
		return node != ""
	})
	// The replacement's worker can register, and b1 land on it, before the
	// provisioner script gets to log the create: wait for the log.
	var created []string
	eventually(t, 10*time.Second, "the provisioner logging the lost node and its replacement", func() bool {
		created = r.created()
		return len(created) >= 2
	})
	if len(created) != 2 {
		t.Fatalf("provisioned %v, want the lost node and its replacement", created)
	}
	lost := strings.Fields(created[0])[1]
	if node == lost || strings.Fields(created[1])[1] != node {
		t.Fatalf("b1 is on %s; provisioned %v", node, created)
	}
	eventually(t, 30*time.Second, "the lost node given back", func() bool {
		return len(r.deleted()) == 1 && r.deleted()[0] == lost && r.status(c, "e").Counts[api.LifecycleDraining] == 0
	})
	if !r.hasEvent(r.leader(), fsm.EventProvisionTimedOut, lost) {
		t.Fatal("no provisionTimedOut event for the lost node")
	}
}

// Idle nodes beyond the warm pool are given back after the idle timeout;
// the warm pool stays.
func testScalesDown(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 0, nil)
	c := r.client()
	r.pool(api.Pool{Name: "e", Warm: 1, IdleTimeout: "2s",
		InstanceTypes: []api.InstanceType{{Name: "std", TotalCapacity: 4, TotalCores: 4}}})
	eventually(t, 45*time.Second, "the warm node idle", func() bool { return r.status(c, "e").Counts[api.LifecycleIdle] == 1 })
	r.submit(c, "b1", "e", 3)
	r.submit(c, "b2", "e", 3)
	eventually(t, 60*time.Second, "both placed with a warm node to spare", func() bool {
		ps := r.status(c, "e")
		return r.placedOn(c, "b1") != "" && r.placedOn(c, "b2") != "" && ps.Counts[api.LifecycleReady] == 2 && ps.Counts[api.LifecycleIdle] == 1
	})
	for _, id := range []string{"b1", "b2"} {
		if _, err := c.DeleteBundle(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "every node but the warm one given back", func() bool {
		ps := r.status(c, "e")
		return len(ps.Nodes) == 1 && ps.Counts[api.LifecycleIdle] == 1 && len(r.deleted()) == len(r.created())-1
	})
	if n := len(r.deleted()); n < 2 {
		t.Fatalf("%d nodes given back, want at least the two the bundles used", n)
	}
	kept := r.status(c, "e").Nodes[0].NodeID
	if got, _, err := c.Node(t.Context(), kept, nil); err != nil || got.Status != api.NodeReady {
		t.Fatalf("the warm node %s: %+v %v", kept, got, err)
	}
}

// A provisioner that hangs, or fails, holds up its own pool only.
func testStuckProvisioner(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 1, nil)
	c := r.client()
	r.pool(api.Pool{Name: "stuck", Provisioner: &api.Provisioner{Command: []string{"sleep", "600"}}})
	r.pool(api.Pool{Name: "failing", Provisioner: &api.Provisioner{Command: []string{"false"}}})
	r.pool(api.Pool{Name: "ok"})
	r.submit(c, "s1", "stuck", 1)
	r.submit(c, "f1", "failing", 1)
	eventually(t, 30*time.Second, "both stuck pools spawning", func() bool {
		return r.status(c, "stuck").Counts[api.LifecycleSpawning] == 1 && r.status(c, "failing").Counts[api.LifecycleSpawning] == 1
	})
	r.submit(c, "o1", "ok", 1)
	r.submit(c, "d1", "default", 1)
	eventually(t, 45*time.Second, "the other pools' bundles placed", func() bool {
		return r.placedOn(c, "o1") != "" && r.placedOn(c, "d1") != ""
	})
	for _, id := range []string{"s1", "f1"} {
		if b := r.bundle(c, id); b.State != api.StateUnplaceable {
			t.Fatalf("%s is %s, want unplaceable while its provisioner is stuck", id, b.State)
		}
	}
}
