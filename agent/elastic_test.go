package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
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
	poll.Eventually(t, 45*time.Second, "b1 placed on a provisioned node", func() error {
		node = r.placedOn(c, "b1")
		return r.placed(c, "b1", node)
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
	poll.Eventually(t, 30*time.Second, "the provisioner called", func() error {
		return poll.Check(len(r.created()) == 1, "created %v", r.created())
	})
	old := r.leader()
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	r.leader(old)
	c = r.client(old)
	poll.Eventually(t, 30*time.Second, "the new leader repeats the create", func() error {
		n := 0
		for _, l := range r.logLines("calls.log") {
			if strings.HasPrefix(l, "create ") {
				n++
			}
		}
		return poll.Check(n >= 2, "%d create calls", n)
	})
	if ps := r.status(c, "e"); ps.Counts[api.LifecycleSpawning] != 1 {
		t.Fatalf("after failover: %+v, want one spawning node", ps.Counts)
	}
	if err := os.Remove(filepath.Join(r.dir, "hold")); err != nil {
		t.Fatal(err)
	}
	var node string
	poll.Eventually(t, 45*time.Second, "b1 placed", func() error {
		node = r.placedOn(c, "b1")
		return r.placed(c, "b1", node)
	})
	if created, ids := r.created(), r.createIDs(); len(created) != 1 || len(ids) != 1 || strings.Fields(created[0])[1] != node {
		t.Fatalf("provisioned %v with request ids %v; want one node, the one b1 is on (%s)", created, ids, node)
	}
}

// Concurrent demand beyond a pool's maxNodes, and beyond the cluster's cap,
// leaves bundles unplaceable with an explanation naming the cap; the caps
// are never exceeded.
func testCapsNeverExceeded(t *testing.T, bin string) {
	r := newElasticRig(t, bin, 0, func(c *agent.Config) { c.Elastic.MaxProvisionedNodes = 3 })
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
	poll.Eventually(r.t, 60*time.Second, fmt.Sprintf("%d bundles of %s placed, the rest stopped by %s", placed, pool, stage), func() error {
		if ps := r.status(c, pool); ps.MaxNodes > 0 && len(ps.Nodes) > ps.MaxNodes || ps.Provisioned > 3 {
			r.t.Fatalf("cap exceeded: %+v", ps)
		}
		bundles, _, err := c.Bundles(r.t.Context(), api.BundleFilter{Pool: pool}, nil)
		if err != nil {
			return err
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
		return poll.Check(ok == placed && capped == len(bundles)-placed, "%d placed and %d capped of %d", ok, capped, len(bundles))
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
	poll.Eventually(t, 60*time.Second, "b1 placed on the second node", func() error {
		node = r.placedOn(c, "b1")
		return r.placed(c, "b1", node)
	})
	// The replacement's worker can register, and b1 land on it, before the
	// provisioner script gets to log the create: wait for the log.
	var created []string
	poll.Eventually(t, 10*time.Second, "the provisioner logging the lost node and its replacement", func() error {
		created = r.created()
		return poll.Check(len(created) >= 2, "created %v", created)
	})
	if len(created) != 2 {
		t.Fatalf("provisioned %v, want the lost node and its replacement", created)
	}
	lost := strings.Fields(created[0])[1]
	if node == lost || strings.Fields(created[1])[1] != node {
		t.Fatalf("b1 is on %s; provisioned %v", node, created)
	}
	poll.Eventually(t, 30*time.Second, "the lost node given back", func() error {
		deleted, counts := r.deleted(), r.status(c, "e").Counts
		return poll.Check(len(deleted) == 1 && deleted[0] == lost && counts[api.LifecycleDraining] == 0,
			"deleted %v, pool counts %v", deleted, counts)
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
	poll.Eventually(t, 45*time.Second, "the warm node idle", func() error {
		counts := r.status(c, "e").Counts
		return poll.Check(counts[api.LifecycleIdle] == 1, "pool counts %v", counts)
	})
	r.submit(c, "b1", "e", 3)
	r.submit(c, "b2", "e", 3)
	poll.Eventually(t, 60*time.Second, "both placed with a warm node to spare", func() error {
		ps := r.status(c, "e")
		b1, b2 := r.placedOn(c, "b1"), r.placedOn(c, "b2")
		return poll.Check(b1 != "" && b2 != "" && ps.Counts[api.LifecycleReady] == 2 && ps.Counts[api.LifecycleIdle] == 1,
			"b1 on %q, b2 on %q, pool counts %v", b1, b2, ps.Counts)
	})
	for _, id := range []string{"b1", "b2"} {
		if _, err := c.DeleteBundle(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, 60*time.Second, "every node but the warm one given back", func() error {
		ps := r.status(c, "e")
		deleted, created := r.deleted(), r.created()
		return poll.Check(len(ps.Nodes) == 1 && ps.Counts[api.LifecycleIdle] == 1 && len(deleted) == len(created)-1,
			"%d nodes, pool counts %v, %d deleted of %d created", len(ps.Nodes), ps.Counts, len(deleted), len(created))
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
	poll.Eventually(t, 30*time.Second, "both stuck pools spawning", func() error {
		stuck, failing := r.status(c, "stuck").Counts, r.status(c, "failing").Counts
		return poll.Check(stuck[api.LifecycleSpawning] == 1 && failing[api.LifecycleSpawning] == 1,
			"stuck %v, failing %v", stuck, failing)
	})
	r.submit(c, "o1", "ok", 1)
	r.submit(c, "d1", "default", 1)
	poll.Eventually(t, 45*time.Second, "the other pools' bundles placed", func() error {
		if err := r.placed(c, "o1", r.placedOn(c, "o1")); err != nil {
			return err
		}
		return r.placed(c, "d1", r.placedOn(c, "d1"))
	})
	for _, id := range []string{"s1", "f1"} {
		if b := r.bundle(c, id); b.State != api.StateUnplaceable {
			t.Fatalf("%s is %s, want unplaceable while its provisioner is stuck", id, b.State)
		}
	}
}
