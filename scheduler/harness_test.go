package scheduler

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// cluster drives a real FSM with consecutive raft indexes, so the scheduler
// is tested against exactly the state the leader would see.
type cluster struct {
	t     tb
	fsm   *fsm.FSM
	index uint64
}

func newCluster(t tb) *cluster {
	return &cluster{t: t, fsm: fsm.New(fsm.Config{Exprs: ExprChecker{}, Eval: ExprChecker{}})}
}

func (c *cluster) apply(typ fsm.MessageType, body any) *fsm.Result {
	c.t.Helper()
	data, err := fsm.Encode(typ, body)
	if err != nil {
		c.t.Fatalf("encode %s: %v", typ, err)
	}
	c.index++
	return c.fsm.Apply(&raft.Log{Index: c.index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result)
}

func (c *cluster) ok(typ fsm.MessageType, body any) *fsm.Result {
	c.t.Helper()
	res := c.apply(typ, body)
	if res.Err != nil {
		c.t.Fatalf("%s: %v", typ, res.Err)
	}
	return res
}

func (c *cluster) pool(p fsm.Pool) { c.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p}) }

// node registers a node and applies its status, cordon and drain as given
// (status defaults to ready).
func (c *cluster) node(n fsm.Node) {
	c.t.Helper()
	status, cordon, drain := n.Status, n.Cordoned, n.Draining
	if status == "" {
		status = fsm.NodeReady
	}
	c.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: n})
	c.ok(fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: n.ID, Status: status, AZ: n.AZ(), Cloud: n.Cloud()})
	if cordon {
		c.ok(fsm.NodeCordonType, &fsm.NodeFlagRequest{NodeID: n.ID, On: true})
	}
	if drain {
		c.ok(fsm.NodeDrainType, &fsm.NodeFlagRequest{NodeID: n.ID, On: true})
	}
}

func (c *cluster) bundle(spec fsm.BundleSpec) *fsm.Bundle {
	c.t.Helper()
	c.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
	return c.state().Bundle(spec.ID)
}

func (c *cluster) state() *fsm.State { return c.fsm.State() }

// commit applies a plan and fails unless every part commits.
func (c *cluster) commit(p *fsm.Plan) *fsm.PlanResult {
	c.t.Helper()
	res := c.ok(fsm.ApplyPlanType, p).Value.(*fsm.PlanResult)
	if len(res.Rejected) > 0 {
		c.t.Fatalf("plan part rejected: %+v", res.Rejected)
	}
	return res
}

// placeAt places jobs of a slot on given nodes with grants fitted against the
// current state, as fixtures for pre-existing usage.
func (c *cluster) placeAt(bundle string, slot int, nodes map[string]string) {
	c.t.Helper()
	st := c.state()
	b := st.Bundle(bundle)
	used := map[string]ledger.Usage{}
	u := fsm.BundleUpdate{BundleID: bundle}
	pool := st.Pool(b.Spec.SlotPool(slot))
	for _, j := range b.Spec.Jobs {
		id, ok := nodes[j.Name]
		if !ok {
			continue
		}
		n := st.Node(id)
		if _, seen := used[id]; !seen {
			used[id] = n.Usage
		}
		g, err := ledger.Fit(n.Inventory(), used[id], pool.Effective(j.Requirements))
		if err != nil {
			c.t.Fatalf("placeAt %s/%s on %s: %v", bundle, j.Name, id, err)
		}
		used[id] = used[id].Add(g)
		u.Place = append(u.Place, fsm.Place{Slot: slot, Job: j.Name, Node: id, Grant: g})
	}
	c.commit(&fsm.Plan{Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{u}}}})
}

// checkInvariants verifies DESIGN §2.4 on the FSM's state by replaying every
// reservation into a fresh ledger and comparing usage, and that bundles and
// reservations agree.
func checkInvariants(t tb, st *fsm.State) {
	t.Helper()
	want := ledger.NewMemStore()
	for _, n := range st.Nodes("") {
		want.AddNode(n.ID, n.Inventory())
	}
	for _, p := range st.Pools() {
		want.SetPoolCaps(p.Name, p.Caps)
		want.SetPoolGroup(p.Name, p.CapGroup)
	}
	for _, sc := range st.CapScopes() {
		want.SetPoolCaps(sc.Name, sc.Caps)
	}
	for _, r := range st.Reservations() {
		if err := ledger.Reserve(want, r); err != nil {
			t.Fatalf("invariant: reservation %s does not fit when replayed: %v", r.Key, err)
		}
	}
	for _, n := range st.Nodes("") {
		_, used, _ := want.Node(n.ID)
		if !jsonEqual(used, n.Usage) {
			t.Fatalf("invariant: node %s usage %+v, recomputed %+v", n.ID, n.Usage, used)
		}
		if err := ledger.Fits(n.Inventory(), n.Usage); err != nil {
			t.Fatalf("invariant: node %s over-committed: %v", n.ID, err)
		}
	}
	for _, p := range st.Pools() {
		if _, used := want.Pool(p.Name); used != p.Usage {
			t.Fatalf("invariant: pool %s usage %+v, recomputed %+v", p.Name, p.Usage, used)
		}
	}
	for _, sc := range st.CapScopes() {
		if _, used := want.Pool(sc.Name); used != sc.Usage {
			t.Fatalf("invariant: scope %s usage %+v, recomputed %+v", sc.Name, sc.Usage, used)
		}
	}
	held := 0
	for _, b := range st.Bundles("", "") {
		for _, r := range b.Replicas {
			for _, j := range r.Jobs {
				if !j.Placed() {
					continue
				}
				held++
				res, ok := st.Reservation(ledger.Key{Bundle: b.ID(), Replica: r.Slot, Job: j.Name})
				if !ok || res.Node != j.NodeID || !ledger.GrantEqual(res.Grant, j.Grant) {
					t.Fatalf("invariant: bundle %s slot %d job %s has no matching reservation", b.ID(), r.Slot, j.Name)
				}
			}
		}
	}
	for _, svc := range st.Services() { // node services hold reservations too
		for _, a := range st.ServiceAssignments(svc.ID) {
			if _, ok := st.Reservation(fsm.ServiceKey(svc.ID, a.NodeID)); ok {
				held++
			}
		}
	}
	if n := len(st.Reservations()); n != held {
		t.Fatalf("invariant: %d reservations, %d placed jobs and service instances", n, held)
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// replicaNodes maps job → node for the replica with the given role.
func replicaNodes(b *fsm.Bundle, role string) map[string]string {
	out := map[string]string{}
	for _, r := range b.Replicas {
		if r.Role != role {
			continue
		}
		for _, j := range r.Jobs {
			if j.Placed() {
				out[j.Name] = j.NodeID
			}
		}
	}
	return out
}

func codes(ds []fsm.Degradation) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Code)
	}
	slices.Sort(out)
	return out
}

func mkNode(id, pool, az, cloud string, capacity int64, cores int) fsm.Node {
	return fsm.Node{
		ID: id, Pool: pool, TotalCapacity: capacity, UtilizationCap: 1000, TotalCores: cores,
		Labels: map[string]string{"az": az, "cloud": cloud},
	}
}

func mkJob(name string, capacity int64, cores int) fsm.Job {
	return fsm.Job{Name: name, Requirements: ledger.Request{Capacity: capacity, Cores: cores}}
}
