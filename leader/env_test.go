package leader

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/fakeclock"
	"github.com/amserver/amserver/internal/logrec"
	"github.com/amserver/amserver/ledger"
)

// env is a leader wired to fakes only: the FSM rig as its Store, a clock
// the test advances, and settable gossip, voters and provisioner calls.
// Duties run one pass at a time, synchronously.
type env struct {
	t       tb
	ctx     context.Context
	store   *fsmRig
	clock   *fakeclock.Clock
	members *fakeMembership
	voters  *fakeVoters
	prov    *fakeProvisioning
	logs    *logrec.Recorder
	l       *Leader
}

// newEnv builds the env; opts adjust the leader's Config before New.
func newEnv(t tb, opts ...func(*Config)) *env {
	e := &env{
		t: t, ctx: context.Background(), store: newFSMRig(t), clock: fakeclock.New(time.Unix(1_700_000_000, 0)),
		members: &fakeMembership{}, voters: &fakeVoters{voters: map[string]string{"s1": "10.0.0.1:7001"}},
		prov: newFakeProvisioning(), logs: &logrec.Recorder{},
	}
	cfg := Config{
		NodeID: "s1", Store: e.store, Clock: e.clock, Membership: e.members, Voters: e.voters,
		Logger: slog.New(e.logs), DeleteTimeout: time.Minute, DeadServerCleanup: 5 * time.Minute, QuorumSize: 2,
		Elastic: ElasticConfig{ProvisionerProblem: allowAll, Provisioning: func(context.Context) Provisioning { return e.prov }},
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.l = New(cfg)
	return e
}

// allowAll is a provisioner policy that allows every provisioner a pool has.
func allowAll(p *fsm.Provisioner) string {
	if p == nil || (p.URL == "" && len(p.Command) == 0) {
		return "has no provisioner"
	}
	return ""
}

// noExec is the default policy: no commands.
func noExec(p *fsm.Provisioner) string {
	if p != nil && p.URL == "" && len(p.Command) > 0 {
		return "has a command provisioner, which these servers do not run (start them with --elastic-allow-exec)"
	}
	return allowAll(p)
}

func (e *env) now() int64 { return e.clock.Now().UnixNano() }

// node registers a node with a capacity and cores and sets its status, as
// the reconciler would.
func (e *env) node(id, pool string, capacity int64, cores int, status string) {
	e.t.Helper()
	e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: id, Pool: pool, TotalCapacity: capacity, TotalCores: cores,
		Labels: map[string]string{"az": "az-" + id},
	}, Now: e.now()})
	if status != fsm.NodeUnknown {
		e.setStatus(id, status)
	}
}

func (e *env) setStatus(id, status string) {
	e.t.Helper()
	e.store.ok(fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: id, Status: status, Now: e.now()})
}

// bundle creates a bundle of one job per capacity, in the spec's pool.
func (e *env) bundle(id, pool, priority string, capacities ...int64) {
	e.t.Helper()
	e.create(spec(id, pool, priority, capacities...))
}

func (e *env) create(s fsm.BundleSpec) {
	e.t.Helper()
	e.store.ok(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: s, Now: e.now()})
}

func spec(id, pool, priority string, capacities ...int64) fsm.BundleSpec {
	s := fsm.BundleSpec{ID: id, Pool: pool, Priority: priority}
	for i, c := range capacities {
		s.Jobs = append(s.Jobs, fsm.Job{Name: string(rune('a' + i)), Requirements: ledger.Request{Capacity: c}})
	}
	return s
}

func (e *env) get(id string) *fsm.Bundle {
	e.t.Helper()
	b := e.store.State().Bundle(id)
	if b == nil {
		e.t.Fatalf("bundle %s is not in the state", id)
	}
	return b
}

// nodesOf maps each job of a bundle's replica (0 = primary) to its node.
func (e *env) nodesOf(id string, replica int) map[string]string {
	e.t.Helper()
	b := e.get(id)
	out := map[string]string{}
	if replica < len(b.Replicas) {
		for _, j := range b.Replicas[replica].Jobs {
			out[j.Name] = j.NodeID
		}
	}
	return out
}

// place commits a plan placing every job of a bundle's replica slot on a
// node, as another duty (or an earlier leader) would have.
func (e *env) place(id string, slot int, node string) {
	e.t.Helper()
	st := e.store.State()
	b, n := st.Bundle(id), st.Node(node)
	used, u := n.Usage, fsm.BundleUpdate{BundleID: id}
	for _, j := range b.Spec.Jobs {
		g, err := ledger.Fit(n.Inventory(), used, j.Requirements)
		if err != nil {
			e.t.Fatalf("place %s on %s: %v", id, node, err)
		}
		used = used.Add(g)
		u.Place = append(u.Place, fsm.Place{Slot: slot, Job: j.Name, Node: node, Grant: g})
	}
	res := e.store.ok(fsm.ApplyPlanType, &fsm.Plan{Now: e.now(), Parts: []fsm.PlanPart{{Updates: []fsm.BundleUpdate{u}}}})
	if pr := res.Value.(*fsm.PlanResult); len(pr.Rejected) > 0 {
		e.t.Fatalf("place %s on %s: %+v", id, node, pr.Rejected)
	}
}

// planResults are the results of the plans duties proposed, in order.
func planResults(t tb, ps []proposal) []*fsm.PlanResult {
	t.Helper()
	var out []*fsm.PlanResult
	for _, p := range ps {
		if p.typ != fsm.ApplyPlanType {
			continue
		}
		if p.res == nil || p.res.Err != nil {
			t.Fatalf("plan failed: %v %v", p.err, p.res)
		}
		out = append(out, p.res.Value.(*fsm.PlanResult))
	}
	return out
}

// member is a gossip member of a role in a state since a time.
func member(name string, role gossip.Role, status gossip.Status, since time.Time) gossip.Member {
	m := gossip.Member{Name: name, Status: status, Since: since, Meta: gossip.Meta{Role: role}}
	if role == gossip.RoleServer {
		m.Meta.RaftAddr = serverAddr(name)
	}
	return m
}

// TestRunStopsWithContext: every duty's loop, wired to the fakes, returns
// once its context ends (each after at most one pass), so a term that
// ends leaves nothing running.
func TestRunStopsWithContext(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 1, fsm.NodeReady)
	e.bundle("b", "p", "", 500)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	duties := e.l.Duties()
	var names []string
	for _, d := range duties {
		names = append(names, d.Name())
	}
	want := []string{"reconcile", "placement", "failover", "drain", "timers", "node-services", "deletion", "rollouts", "elastic"}
	if !slices.Equal(names, want) {
		t.Fatalf("duties %v, want %v", names, want)
	}
	Run(ctx, duties)
}
