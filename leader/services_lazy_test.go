package leader

import (
	"maps"
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// labelled registers a ready node with 4 capacity units, 4 cores and
// labels.
func (e *env) labelled(id, pool string, labels map[string]string) {
	e.t.Helper()
	e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: id, Pool: pool, TotalCapacity: 4000, TotalCores: 4, Labels: labels,
	}, Now: e.now()})
	e.setStatus(id, fsm.NodeReady)
}

func (e *env) upsertService(svc fsm.NodeService) {
	e.t.Helper()
	e.store.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: svc})
}

// offered lists the nodes that show service id's capabilities.
func (e *env) offered(id string) []string {
	var out []string
	for _, n := range e.store.State().Nodes("") {
		if n.Provided[id] != nil {
			out = append(out, n.ID)
		}
	}
	slices.Sort(out)
	return out
}

func noRejects(t *testing.T, e *env) {
	t.Helper()
	for _, p := range e.store.take() {
		if p.res == nil || p.res.Err != nil {
			t.Fatalf("%s failed: %v %v", p.typ, p.err, p.res)
		}
		if r, ok := p.res.Value.(*fsm.PlanResult); ok && len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
}

// TestServicesRequirementsAndConstraints: an eager service runs only on
// nodes that meet its constraints and have room for its requirements, and
// the ledger charges them there (so bundles see less room); a constraint
// that stops holding stops it.
func TestServicesRequirementsAndConstraints(t *testing.T) {
	e := newEnv(t)
	e.labelled("n1", "p", map[string]string{"agent": "yes"})
	e.labelled("n2", "p", map[string]string{"agent": "yes"})
	e.labelled("n3", "p", map[string]string{"agent": "no"})
	e.place4(t, "n2") // n2 is full: no room for the service's capacity
	e.upsertService(fsm.NodeService{ID: "agent", Pools: []string{"p"}, Constraints: []string{`node.labels["agent"] == "yes"`},
		Requirements: fsm.ServiceRequirements{Capacity: 1500, Cores: 1}})
	d := &services{l: e.l}
	d.pass(e.ctx)
	noRejects(t, e)
	if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("running on %v, want [n1]", got)
	}
	n1 := e.store.State().Node("n1")
	if n1.Usage.Capacity != 1500 || len(n1.Usage.Cores) != 1 {
		t.Fatalf("n1 usage %+v: the service's requirements are not charged", n1.Usage)
	}
	if _, err := ledger.Fit(n1.Inventory(), n1.Usage, ledger.Request{Capacity: 3000}); err == nil {
		t.Fatal("a 3-unit job still fits n1 beside the 1.5-unit service")
	}
	e.upsertService(fsm.NodeService{ID: "agent", Pools: []string{"p"}, Constraints: []string{`node.labels["agent"] == "no"`},
		Requirements: fsm.ServiceRequirements{Capacity: 1500, Cores: 1}})
	d.pass(e.ctx)
	noRejects(t, e)
	if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, []string{"n3"}) {
		t.Fatalf("after the constraint changed: running on %v, want [n3]", got)
	}
	if u := e.store.State().Node("n1").Usage; u.Capacity != 0 {
		t.Fatalf("n1 still charged %+v", u)
	}
}

// place4 fills a node with a 4-unit bundle.
func (e *env) place4(t *testing.T, node string) {
	t.Helper()
	id := "fill-" + node
	e.bundle(id, "p", fsm.PrioritySilver, 4000)
	e.place(id, 0, node)
}

// TestServicesLazy: a lazy service is offered (its capability shown, no
// instance) on every node it may run on; it starts where a bundle
// consuming that capability is placed and stops when the bundle leaves,
// keeping the offer; a node that stops qualifying loses the offer.
func TestServicesLazy(t *testing.T) {
	e := newEnv(t)
	e.labelled("n1", "p", map[string]string{"cache": "ok"})
	e.labelled("n2", "p", map[string]string{"cache": "ok"})
	e.labelled("n3", "p", map[string]string{"cache": "no"})
	e.upsertService(fsm.NodeService{ID: "cache", Pools: []string{"p"}, Lifecycle: fsm.LifecycleLazy,
		Constraints: []string{`node.labels["cache"] == "ok"`}, Requirements: fsm.ServiceRequirements{Capacity: 500},
		Provides: []ledger.Capability{{Name: "cache", Count: 4}}})
	d := &services{l: e.l}
	d.pass(e.ctx)
	noRejects(t, e)
	if got := e.offered("cache"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("offered on %v, want [n1 n2]", got)
	}
	if got := e.running(); len(got) != 0 {
		t.Fatalf("a lazy service started with no consumer: %v", got)
	}

	e.create(fsm.BundleSpec{ID: "user", Pool: "p", Priority: fsm.PrioritySilver, Jobs: []fsm.Job{{Name: "a",
		Requirements: ledger.Request{Capacity: 1000, Capabilities: []ledger.CapabilityRequest{{Name: "cache", Count: 1}}}}}})
	e.place("user", 0, "n2")
	d.pass(e.ctx)
	noRejects(t, e)
	if got := e.running(); !maps.EqualFunc(got, map[string][]string{"n2": {"cache"}}, slices.Equal) {
		t.Fatalf("running %v, want the service on n2 only", got)
	}
	if u := e.store.State().Node("n2").Usage; u.Capacity != 1500 {
		t.Fatalf("n2 usage %+v, want the bundle's 1 and the service's 0.5", u)
	}
	d.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("a second pass proposed %v", typesOf(ps))
	}

	e.store.ok(fsm.DeleteBundleType, &fsm.DeleteBundleRequest{ID: "user", Now: e.now()})
	d.pass(e.ctx)
	noRejects(t, e)
	if got := e.running(); len(got) != 0 {
		t.Fatalf("the service still runs after its last consumer left: %v", got)
	}
	if got := e.offered("cache"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("offers %v after the stop, want [n1 n2]", got)
	}

	e.store.ok(fsm.NodeCordonType, &fsm.NodeFlagRequest{NodeID: "n1", On: true, Now: e.now()})
	d.pass(e.ctx)
	noRejects(t, e)
	if got := e.offered("cache"); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("offers %v after cordoning n1, want [n2]", got)
	}
	e.store.ok(fsm.DeleteServiceType, &fsm.DeleteServiceRequest{ID: "cache"})
	if got := e.offered("cache"); len(got) != 0 {
		t.Fatalf("offers %v after the service was deleted", got)
	}
}
