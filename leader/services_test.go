package leader

import (
	"maps"
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// nicNode registers a node with nics of its own and sets its status.
func (e *env) nicNode(id, pool string, nics int64, status string) {
	e.t.Helper()
	n := fsm.Node{ID: id, Pool: pool, TotalCapacity: 4000, TotalCores: 4}
	if nics > 0 {
		n.Capabilities = []ledger.Capability{{Name: "nic", Count: nics}}
	}
	e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: n, Now: e.now()})
	e.setStatus(id, status)
}

func (e *env) service(id string, nics int64, pools ...string) {
	e.t.Helper()
	svc := fsm.NodeService{ID: id, Pools: pools}
	if nics > 0 {
		svc.Consumes = []ledger.CapabilityRequest{{Name: "nic", Count: nics}}
	}
	e.store.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: svc})
}

// running maps each node to the services desired running there.
func (e *env) running() map[string][]string {
	out := map[string][]string{}
	st := e.store.State()
	for _, svc := range st.Services() {
		for _, a := range st.ServiceAssignments(svc.ID) {
			if a.Desired == fsm.DesiredRun {
				out[a.NodeID] = append(out[a.NodeID], svc.ID)
			}
		}
	}
	return out
}

// TestServicesPlaceEverywhere: an eager service runs on every placeable
// node of its pools that can give what it consumes, and nowhere else.
func TestServicesPlaceEverywhere(t *testing.T) {
	tests := []struct {
		name string
		nics int64
		want []string
	}{
		{"consumes nothing", 0, []string{"n1", "n2"}},
		{"consumes a nic", 1, []string{"n1"}},
		{"consumes more nics than any node has", 3, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.nicNode("n1", "p", 2, fsm.NodeReady)
			e.nicNode("n2", "p", 0, fsm.NodeReady)
			e.nicNode("n3", "p", 2, fsm.NodeSuspect)
			e.nicNode("n4", "q", 2, fsm.NodeReady)
			e.nicNode("n5", "p", 2, fsm.NodeReady)
			e.store.ok(fsm.NodeCordonType, &fsm.NodeFlagRequest{NodeID: "n5", On: true, Now: e.now()})
			e.service("agent", tc.nics, "p")
			(&services{l: e.l}).pass(e.ctx)
			if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, tc.want) {
				t.Fatalf("running on %v, want %v", got, tc.want)
			}
			for _, r := range planResults(t, e.store.take()) {
				if len(r.Rejected) != 0 {
					t.Fatalf("rejected parts: %+v", r.Rejected)
				}
			}
			(&services{l: e.l}).pass(e.ctx)
			if ps := e.store.take(); len(ps) != 0 {
				t.Fatalf("a second pass proposed %v", typesOf(ps))
			}
		})
	}
}

// TestServicesStopOnLostNode: a service instance on a node that went down
// or left is stopped; one that became suspect keeps running.
func TestServicesStopOnLostNode(t *testing.T) {
	for _, status := range []string{fsm.NodeDown, fsm.NodeLeft, fsm.NodeSuspect} {
		t.Run(status, func(t *testing.T) {
			e := newEnv(t)
			e.nicNode("n1", "p", 0, fsm.NodeReady)
			e.nicNode("n2", "p", 0, fsm.NodeReady)
			e.service("agent", 0, "p")
			d := &services{l: e.l}
			d.pass(e.ctx)
			e.setStatus("n1", status)
			d.pass(e.ctx)
			want := []string{"n2"}
			if status == fsm.NodeSuspect {
				want = []string{"n1", "n2"}
			}
			if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, want) {
				t.Fatalf("running on %v, want %v", got, want)
			}
		})
	}
}

// TestServicesLeaveRemovedPool: an instance on a node of a pool the
// service no longer names is stopped.
func TestServicesLeaveRemovedPool(t *testing.T) {
	e := newEnv(t)
	e.nicNode("n1", "p", 0, fsm.NodeReady)
	e.nicNode("n2", "q", 0, fsm.NodeReady)
	e.service("agent", 0, "p", "q")
	d := &services{l: e.l}
	d.pass(e.ctx)
	e.service("agent", 0, "q")
	d.pass(e.ctx)
	if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("running on %v, want [n2]", got)
	}
}

// TestServicesShareNodeWithoutRejects: two services that together need
// more nics than a node has: the plan places the first (by id) and does
// not propose the second, which the FSM would reject on every pass.
func TestServicesShareNodeWithoutRejects(t *testing.T) {
	e := newEnv(t)
	e.nicNode("n1", "p", 2, fsm.NodeReady)
	e.nicNode("n2", "p", 4, fsm.NodeReady)
	e.service("a", 2, "p")
	e.service("b", 2, "p")
	e.service("c", 1, "p")
	d := &services{l: e.l}
	d.pass(e.ctx)
	want := map[string][]string{"n1": {"a"}, "n2": {"a", "b"}}
	if got := e.running(); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("running %v, want %v", got, want)
	}
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
	d.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("a second pass proposed %v", typesOf(ps))
	}
}

// TestServicesRunWhereTheirDriverRuns: a service whose driver a node does
// not run is not placed there (a node listing no runtimes runs exec).
func TestServicesRunWhereTheirDriverRuns(t *testing.T) {
	e := newEnv(t)
	for id, rts := range map[string][]string{"old": nil, "ctr": {"docker"}, "both": {"exec", "container"}} {
		e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{ID: id, Pool: "p", TotalCapacity: 4000, Runtimes: rts}, Now: e.now()})
		e.setStatus(id, fsm.NodeReady)
	}
	for id, job := range map[string]*fsm.LegacyJob{
		"exec": {Driver: fsm.DriverExec, Command: []string{"/bin/x"}}, "docker": {Driver: fsm.DriverDocker, Image: "x"}, "none": {},
	} {
		svc := fsm.NodeService{ID: id, Pools: []string{"p"}, Launch: fsm.Launch{Kind: fsm.LaunchLegacy, Job: job}}
		e.store.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: svc})
	}
	(&services{l: e.l}).pass(e.ctx)
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
	want := map[string][]string{"old": {"exec", "none"}, "ctr": {"docker", "none"}, "both": {"docker", "exec", "none"}}
	for node, services := range e.running() {
		if slices.Sort(services); !slices.Equal(services, want[node]) {
			t.Errorf("%s runs %v, want %v", node, services, want[node])
		}
	}
}

// TestServicesKeepEagerOffersWhereTheyRun: an eager service's capability
// shows on the nodes whose instance reported running, and later passes
// leave it there; where the instance stops, the offer goes.
func TestServicesKeepEagerOffersWhereTheyRun(t *testing.T) {
	e := newEnv(t)
	e.nicNode("n1", "p", 0, fsm.NodeReady)
	e.nicNode("n2", "p", 0, fsm.NodeReady)
	e.upsertService(fsm.NodeService{ID: "gpu", Pools: []string{"p"}, Provides: []ledger.Capability{{Name: "gpu", Count: 1}}})
	d := &services{l: e.l}
	d.pass(e.ctx)
	noRejects(t, e)
	for _, a := range e.store.State().ServiceAssignments("gpu") {
		e.store.ok(fsm.AssignmentStatusType, &fsm.AssignmentStatusRequest{
			NodeID: a.NodeID, AssignmentID: a.ID, Status: fsm.JobRunning, Now: e.now(), Generation: a.Generation})
	}
	if got := e.offered("gpu"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("offered on %v once running, want [n1 n2]", got)
	}
	d.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("a pass over running instances proposed %v", typesOf(ps))
	}
	if got := e.offered("gpu"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("offered on %v after a pass, want [n1 n2]", got)
	}
	e.setStatus("n2", fsm.NodeDown)
	d.pass(e.ctx)
	noRejects(t, e)
	if got := e.offered("gpu"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("offered on %v after n2 went down, want [n1]", got)
	}
}

// TestServicesReplaceStoppedForGrant: an apply that changes a service's
// requirements stops its instance (fsm.UpsertServiceRequest.Update); the
// next pass places it again with the new grant, but only once its worker
// reported it stopped: placed before, it would take the stopping
// instance's id, and its worker would run the old process on.
func TestServicesReplaceStoppedForGrant(t *testing.T) {
	e := newEnv(t)
	e.nicNode("n1", "p", 0, fsm.NodeReady)
	svc := fsm.NodeService{ID: "agent", Pools: []string{"p"}, Requirements: fsm.ServiceRequirements{Capacity: 500}}
	e.upsertService(svc)
	d := &services{l: e.l}
	d.pass(e.ctx)
	id := "svc:agent@n1"
	e.store.ok(fsm.AssignmentStatusType, &fsm.AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: fsm.JobRunning, Now: e.now()})
	noRejects(t, e)

	svc.Requirements.Capacity = 700
	e.store.ok(fsm.UpsertServiceType, &fsm.UpsertServiceRequest{Service: svc, Update: true})
	d.pass(e.ctx)
	if a := e.store.State().Assignment(id); a == nil || a.Desired != fsm.DesiredStop {
		t.Fatalf("placed again before its worker stopped it: %+v", a)
	}
	e.store.ok(fsm.AssignmentStatusType, &fsm.AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: fsm.JobStopped, Now: e.now()})
	d.pass(e.ctx)
	noRejects(t, e)
	st := e.store.State()
	r, ok := st.Reservation(fsm.ServiceKey("agent", "n1"))
	if a := st.Assignment(id); a == nil || a.Desired != fsm.DesiredRun || !ok || r.Grant.Capacity != 700 {
		t.Fatalf("not placed again with the new grant: %+v, reservation %+v (%t)", a, r, ok)
	}
}
