package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// serviceExpect is a scenario's expectation of a service bundle.
type serviceExpect struct {
	Placed        *int `json:"placed"`        // complete replicas
	NodesUsed     *int `json:"nodesUsed"`     // distinct nodes holding some replica
	AzsUsed       *int `json:"azsUsed"`       // distinct AZs holding some replica
	PerNodeAtMost *int `json:"perNodeAtMost"` // replicas on any one node
	PerAzAtMost   *int `json:"perAzAtMost"`   // replicas in any one AZ
}

// spreadCounts counts a service's replicas per node and per AZ (a replica
// once per node and AZ it uses), and its complete replicas.
func spreadCounts(st *fsm.State, b *fsm.Bundle) (perNode, perAz map[string]int, complete int) {
	perNode, perAz = map[string]int{}, map[string]int{}
	for i := range b.Replicas {
		r := &b.Replicas[i]
		if r.Complete() {
			complete++
		}
		nodes, azs := map[string]bool{}, map[string]bool{}
		for _, j := range r.Jobs {
			if j.Placed() {
				nodes[j.NodeID] = true
				azs[st.Node(j.NodeID).AZ()] = true
			}
		}
		for n := range nodes {
			perNode[n]++
		}
		for az := range azs {
			perAz[az]++
		}
	}
	return perNode, perAz, complete
}

func checkService(fail func(string, ...any), st *fsm.State, b *fsm.Bundle, e *serviceExpect) {
	if e == nil {
		return
	}
	perNode, perAz, complete := spreadCounts(st, b)
	if e.Placed != nil && complete != *e.Placed {
		fail("complete replicas %d, want %d", complete, *e.Placed)
	}
	if e.NodesUsed != nil && len(perNode) != *e.NodesUsed {
		fail("nodes used %v, want %d", perNode, *e.NodesUsed)
	}
	if e.AzsUsed != nil && len(perAz) != *e.AzsUsed {
		fail("azs used %v, want %d", perAz, *e.AzsUsed)
	}
	for n, k := range perNode {
		if e.PerNodeAtMost != nil && k > *e.PerNodeAtMost {
			fail("node %s holds %d replicas, want at most %d", n, k, *e.PerNodeAtMost)
		}
	}
	for az, k := range perAz {
		if e.PerAzAtMost != nil && k > *e.PerAzAtMost {
			fail("az %s holds %d replicas, want at most %d", az, k, *e.PerAzAtMost)
		}
	}
	for _, r := range b.Replicas {
		if r.Role != fsm.RoleReplica {
			fail("replica %d has role %s", r.Slot, r.Role)
		}
	}
}

func serviceSpec(id string, count int, jobs ...fsm.Job) fsm.BundleSpec {
	return fsm.BundleSpec{ID: id, Pool: "p", Kind: fsm.KindService, Count: count, Jobs: jobs}
}

// serviceCluster is n nodes per AZ in the given AZs, 8 units and 8 cores each.
func serviceCluster(t *testing.T, azs []string, perAz int) *cluster {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for _, az := range azs {
		for i := range perAz {
			c.node(mkNode(fmt.Sprintf("%s%d", az, i+1), "p", az, "x", 8000, 8))
		}
	}
	return c
}

func placeAll(t *testing.T, c *cluster, seed uint64, bundles ...*fsm.Bundle) []Result {
	t.Helper()
	b := newBatch(c, seed)
	res := b.PlaceAll(bundles)
	c.commit(b.Plan(1))
	checkInvariants(t, c.state())
	return res
}

// TestServiceScaleKeepsOthers: a PUT that changes only count adds replicas
// unplaced (the placer fills them) or removes the highest-index ones,
// releasing what they hold; the others keep their nodes, grants and the
// bundle's epoch.
func TestServiceScaleKeepsOthers(t *testing.T) {
	c := serviceCluster(t, []string{"a", "b"}, 2)
	b := c.bundle(serviceSpec("s", 3, mkJob("web", 1000, 1)))
	placeAll(t, c, 1, b)
	before := c.state().Bundle("s")
	scale := func(n int) *fsm.Bundle {
		spec := before.Spec
		spec.Count = n
		c.ok(fsm.ReplaceBundleType, &fsm.ReplaceBundleRequest{Spec: spec})
		return c.state().Bundle("s")
	}
	up := scale(5)
	if len(up.Replicas) != 5 || up.Epoch != before.Epoch || up.State != fsm.StateDegraded {
		t.Fatalf("scaled up: %d replicas, epoch %d→%d, state %s", len(up.Replicas), before.Epoch, up.Epoch, up.State)
	}
	for i := range 3 {
		if !reflect.DeepEqual(up.Replicas[i].Jobs, before.Replicas[i].Jobs) {
			t.Fatalf("replica %d changed on scale up: %+v → %+v", i, before.Replicas[i].Jobs, up.Replicas[i].Jobs)
		}
	}
	placeAll(t, c, 2, up)
	full := c.state().Bundle("s")
	if full.State != fsm.StatePlaced {
		t.Fatalf("after placing the new replicas: %s %+v", full.State, full.Degradations)
	}
	before = full
	down := scale(2)
	if len(down.Replicas) != 2 || down.Epoch != full.Epoch {
		t.Fatalf("scaled down: %d replicas, epoch %d", len(down.Replicas), down.Epoch)
	}
	for i := range 2 {
		if !reflect.DeepEqual(down.Replicas[i].Jobs, full.Replicas[i].Jobs) {
			t.Fatalf("replica %d changed on scale down", i)
		}
	}
	st := c.state()
	for _, r := range st.Reservations() {
		if r.Key.Bundle == "s" && r.Key.Replica >= 2 {
			t.Fatalf("reservation %s of a removed replica kept", r.Key)
		}
	}
	for _, a := range st.BundleAssignments("s") {
		if a.Replica >= 2 && a.Desired != fsm.DesiredStop {
			t.Fatalf("assignment %s of a removed replica still desired %s", a.ID, a.Desired)
		}
		if a.Replica < 2 && a.Desired != fsm.DesiredRun {
			t.Fatalf("assignment %s of a kept replica desired %s", a.ID, a.Desired)
		}
	}
	checkInvariants(t, st)
}

// TestServiceRepairReplacesReplica: a replica whose node goes down is
// re-placed elsewhere; no replica is promoted, the epoch stays, and the
// replicas on healthy nodes do not move.
func TestServiceRepairReplacesReplica(t *testing.T) {
	c := serviceCluster(t, []string{"a", "b"}, 2)
	b := c.bundle(serviceSpec("s", 3, mkJob("web", 1000, 1)))
	placeAll(t, c, 1, b)
	before := c.state().Bundle("s")
	victim := before.Replicas[1].Jobs[0].NodeID
	c.status(victim, fsm.NodeDown)
	res := newBatch(c, 3).Repair(c.state().Bundle("s"), map[string]bool{victim: true})
	if res.Update == nil || res.Update.Promote {
		t.Fatalf("repair update %+v", res.Update)
	}
	c.commit(&fsm.Plan{Now: 1, Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{*res.Update}}}})
	after := c.state().Bundle("s")
	if after.State != fsm.StatePlaced || after.Epoch != before.Epoch {
		t.Fatalf("after repair: state %s epoch %d→%d", after.State, before.Epoch, after.Epoch)
	}
	for i, r := range after.Replicas {
		was := before.Replicas[i].Jobs[0]
		now := r.Jobs[0]
		switch {
		case was.NodeID == victim && now.NodeID == victim:
			t.Fatalf("replica %d left on the down node", i)
		case was.NodeID != victim && !reflect.DeepEqual(was, now):
			t.Fatalf("replica %d on a healthy node moved: %+v → %+v", i, was, now)
		}
	}
	checkInvariants(t, c.state())
}

// TestServiceRecheckMaxPerNode: the FSM refuses a plan that puts more of
// a service's replicas on a node than maxPerNode allows, or more in an AZ
// than maxPerAz (a stale or wrong plan), and accepts one within the bounds.
func TestServiceRecheckMaxPerNode(t *testing.T) {
	for _, tc := range []struct {
		name             string
		perNode, perAz   int
		nodes            []string
		rejected, passes bool
	}{
		{name: "two on a node over maxPerNode 1", perNode: 1, nodes: []string{"a1", "a1"}, rejected: true},
		{name: "two on a node within maxPerNode 2", perNode: 2, nodes: []string{"a1", "a1"}, passes: true},
		{name: "two in an az over maxPerAz 1", perAz: 1, nodes: []string{"a1", "a2"}, rejected: true},
		{name: "two azs within maxPerAz 1", perAz: 1, nodes: []string{"a1", "b1"}, passes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serviceCluster(t, []string{"a", "b"}, 2)
			spec := serviceSpec("s", len(tc.nodes), mkJob("web", 1000, 0))
			spec.MaxPerNode, spec.MaxPerAz = tc.perNode, tc.perAz
			c.bundle(spec)
			u := fsm.BundleUpdate{BundleID: "s"}
			for slot, n := range tc.nodes {
				u.Place = append(u.Place, fsm.Place{Slot: slot, Job: "web", Node: n, Grant: grantOf(1000)})
			}
			res := c.ok(fsm.ApplyPlanType, &fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{u}}}}).Value.(*fsm.PlanResult)
			if got := len(res.Rejected) > 0; got != tc.rejected {
				t.Fatalf("rejected %v, want %v: %+v", got, tc.rejected, res.Rejected)
			}
			if tc.rejected && res.Rejected[0].Check != StageMaxPerNode && res.Rejected[0].Check != StageMaxPerAz {
				t.Fatalf("rejected by %q", res.Rejected[0].Check)
			}
		})
	}
}

// TestPropertyServicePlacement draws small clusters and services (1..4
// replicas of a random gang, random maxPerNode / maxPerAz) and checks that
// the plan commits on a real FSM (whose re-check enforces the bounds), the
// ledger invariants hold, every replica is whole or absent (gang), every
// complete replica keeps the hard rules, no node or AZ holds more replicas
// than its bound, nothing is placed exactly when brute force finds no home
// for even one replica, and the same input and seed give the same plan.
func TestPropertyServicePlacement(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorldWith(t, 1, 6, genService(t))
		seed := rapid.Uint64().Draw(t, "seed")
		before := w.c.state()
		spec := &w.bundle.Spec
		plan, res := placeOne(before, w.bundle, seed)
		plan2, _ := placeOne(before, w.bundle, seed)
		if !reflect.DeepEqual(plan, plan2) {
			t.Fatalf("same input and seed gave different plans")
		}
		w.c.commit(plan)
		after := w.c.state()
		checkInvariants(t, after)
		b := after.Bundle(spec.ID)
		checkServiceRules(t, before, b, false)
		_, _, complete := spreadCounts(after, b)
		feasible, _ := newOracle(before, spec, 0, spec.Placement.SameAz == fsm.SameAzHard, nil).feasible()
		if (complete > 0) != feasible {
			t.Fatalf("brute force feasible=%v, engine placed %d replicas (explain %s)", feasible, complete, explainString(res.Explain))
		}
		if res.PrimaryPlaced != (complete == spec.Count) {
			t.Fatalf("result says all placed %v, %d of %d are", res.PrimaryPlaced, complete, spec.Count)
		}
	})
}

// TestPropertyServiceRepair: after random nodes go down, a service's
// repair commits; nothing of it stays on a lost node; replicas on healthy
// nodes keep their nodes; nothing is promoted and the epoch stays; the
// bounds and the hard rules hold.
func TestPropertyServiceRepair(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorldWith(t, 2, 6, genService(t))
		plan, _ := placeOne(w.c.state(), w.bundle, rapid.Uint64().Draw(t, "placeSeed"))
		w.c.commit(plan)
		c := w.c
		lost := map[string]bool{}
		var ids []string
		for _, n := range c.state().Nodes("p") {
			if rapid.IntRange(0, 2).Draw(t, "lost"+n.ID) == 0 {
				c.status(n.ID, fsm.NodeDown)
				lost[n.ID] = true
				ids = append(ids, n.ID)
			}
		}
		before := c.state().Bundle("b")
		res := NewEngine(Options{}).Snapshot(c.state()).NewBatch(rapid.Uint64().Draw(t, "seed")).Repair(before, lost)
		var moved []string
		if res.Update != nil {
			if res.Update.Promote {
				t.Fatalf("a service repair promotes")
			}
			moved = releasedKeys(res.Update.Release)
			c.commit(&fsm.Plan{Now: 1, Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{*res.Update}}}})
		}
		st := c.state()
		checkInvariants(t, st)
		after := st.Bundle("b")
		for _, r := range st.Reservations() {
			if r.Key.Bundle == "b" && slices.Contains(ids, r.Node) {
				t.Fatalf("reservation %s left on %s", r.Key, r.Node)
			}
		}
		now := slotJobs(after)
		for k, j := range slotJobs(before) {
			if !slices.Contains(moved, k) && now[k].NodeID != j.NodeID {
				t.Fatalf("%s was not lost but moved from %s to %s", k, j.NodeID, now[k].NodeID)
			}
		}
		if after.Epoch != before.Epoch {
			t.Fatalf("epoch %d→%d", before.Epoch, after.Epoch)
		}
		checkServiceRules(t, st, after, true)
	})
}

// genService turns the drawn bundle into a service.
func genService(t *rapid.T) func(*fsm.BundleSpec) {
	return func(spec *fsm.BundleSpec) {
		spec.Resilience = nil
		spec.Kind = fsm.KindService
		spec.Count = rapid.IntRange(1, 4).Draw(t, "count")
		spec.MaxPerNode = rapid.IntRange(0, 2).Draw(t, "maxPerNode")
		spec.MaxPerAz = rapid.IntRange(0, 3).Draw(t, "maxPerAz")
	}
}

// checkServiceRules: every replica is complete or holds nothing (unless
// partial, after a repair: the survivors of a replica that could not be
// completed stay, as a resilient primary's do), every complete one keeps
// the hard rules, and the bounds hold.
func checkServiceRules(t *rapid.T, st *fsm.State, b *fsm.Bundle, partial bool) {
	spec := &b.Spec
	for _, r := range b.Replicas {
		if !r.Complete() {
			if len(placedOf(&r)) > 0 && !partial {
				t.Fatalf("replica %d is partly placed: %+v", r.Slot, r.Jobs)
			}
			continue
		}
		pool := st.Pool(spec.Pool)
		nodes := map[string]string{}
		for _, j := range r.Jobs {
			nodes[j.Name] = j.NodeID
			if st.Node(j.NodeID).Status == fsm.NodeReady {
				checkJobOnNode(t, st, pool, spec.Job(j.Name), j)
			}
		}
		checkReplicaRules(t, st, spec, nodes, b)
	}
	perNode, perAz, _ := spreadCounts(st, b)
	for n, k := range perNode {
		if spec.MaxPerNode > 0 && k > spec.MaxPerNode {
			t.Fatalf("node %s holds %d replicas, maxPerNode %d", n, k, spec.MaxPerNode)
		}
	}
	for az, k := range perAz {
		if spec.MaxPerAz > 0 && k > spec.MaxPerAz {
			t.Fatalf("az %s holds %d replicas, maxPerAz %d", az, k, spec.MaxPerAz)
		}
	}
}

func grantOf(capacity int64) ledger.Grant { return ledger.Grant{Capacity: capacity} }
