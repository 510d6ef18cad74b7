package fsm

import (
	"slices"
	"testing"

	"github.com/amserver/amserver/ledger"
)

// updateHarness runs an eager service on n1 and n2 (both running, so both
// show its cache capability) and a bundle on n1 that consumes all of n1's.
// n2 also runs docker.
func updateHarness(t *testing.T) (*harness, NodeService) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	n2 := testNode("n2", "p", "az1", "c1", 4000, 4)
	n2.Runtimes = []string{"exec", "docker"}
	h.readyNode(n2)
	svc := NodeService{ID: "sc", Pools: []string{"p"}, Requirements: ServiceRequirements{Capacity: 500},
		Provides: []ledger.Capability{{Name: "cache", Count: 2}},
		Launch:   Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverNone, Command: []string{"v1"}}}}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc})
	var part PlanPart
	for _, n := range []string{"n1", "n2"} {
		part.Services = append(part.Services, ServicePlacement{ServiceID: "sc", Node: n, Grant: ledger.Grant{Capacity: 500}})
	}
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{part}})
	for _, n := range []string{"n1", "n2"} {
		h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: n, AssignmentID: serviceAssignmentID("sc", n), Status: JobRunning})
	}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", Job{Name: "j", Requirements: ledger.Request{
		Capabilities: []ledger.CapabilityRequest{{Name: "cache", Count: 2}}}})})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	if !h.fsm.State().Bundle("b1").Replicas[0].Complete() {
		t.Fatal("setup: the consumer is not placed")
	}
	return h, svc
}

// TestServiceUpdateReachesInstances: an upsert with Update carries a new
// launch, request or provides to the running instances; without it (an
// older leader's command) only the record changes, as before.
func TestServiceUpdateReachesInstances(t *testing.T) {
	v2 := func(driver string) Launch {
		l := Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: driver, Command: []string{"v2"}}}
		if driver == DriverDocker {
			l.Job.Image = "cache:2"
		}
		return l
	}
	type want struct {
		relaunched, stopped []string // nodes
		provides            int64    // cache count n2 shows (0: none)
		consumerPlaced      bool
	}
	cases := []struct {
		name   string
		change func(*NodeService)
		update bool
		want   want
	}{
		{"launch", func(s *NodeService) { s.Launch = v2(DriverNone) }, true,
			want{relaunched: []string{"n1", "n2"}, provides: 2, consumerPlaced: true}},
		{"launch n1 cannot run", func(s *NodeService) { s.Launch = v2(DriverDocker) }, true,
			want{relaunched: []string{"n2"}, stopped: []string{"n1"}, provides: 2}},
		{"requirements", func(s *NodeService) { s.Requirements.Capacity = 700 }, true,
			want{stopped: []string{"n1", "n2"}}},
		{"consumes", func(s *NodeService) { s.Consumes = []ledger.CapabilityRequest{{Name: "nic", Count: 1}} }, true,
			want{stopped: []string{"n1", "n2"}}},
		{"provides less", func(s *NodeService) { s.Provides[0].Count = 1 }, true,
			want{provides: 1}},
		{"provides more", func(s *NodeService) { s.Provides[0].Count = 3 }, true,
			want{provides: 3, consumerPlaced: true}},
		{"provides nothing", func(s *NodeService) { s.Provides = nil }, true,
			want{}},
		{"everything, without Update", func(s *NodeService) {
			s.Launch, s.Requirements.Capacity, s.Provides = v2(DriverNone), 700, nil
		}, false, want{provides: 2, consumerPlaced: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, svc := updateHarness(t)
			svc.Provides = slices.Clone(svc.Provides)
			tc.change(&svc)
			h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc, Update: tc.update})
			st := h.fsm.State()
			for _, n := range []string{"n1", "n2"} {
				a := st.Assignment(serviceAssignmentID("sc", n))
				_, reserved := st.Reservation(ServiceKey("sc", n))
				switch {
				case slices.Contains(tc.want.relaunched, n):
					if a.Desired != DesiredRun || a.Generation != 1 || a.Status != JobAssigned ||
						a.Launch.Job.Command[0] != "v2" || a.Runtime != svc.Launch.Job.Driver || !reserved {
						t.Errorf("%s: not relaunched in place: %+v (reserved %t)", n, a, reserved)
					}
				case slices.Contains(tc.want.stopped, n):
					if a.Desired != DesiredStop || reserved || st.Node(n).Provided["sc"] != nil {
						t.Errorf("%s: not stopped and released: %+v (reserved %t, provided %v)", n, a, reserved, st.Node(n).Provided)
					}
				default:
					if a.Desired != DesiredRun || a.Generation != 0 || a.Status != JobRunning || a.Launch.Job.Command[0] != "v1" || !reserved {
						t.Errorf("%s: instance changed: %+v (reserved %t)", n, a, reserved)
					}
				}
			}
			var provides int64
			if p := st.Node("n2").Provided["sc"]; len(p) > 0 {
				provides = p[0].Count
			}
			if provides != tc.want.provides {
				t.Errorf("n2 shows %d cache, want %d", provides, tc.want.provides)
			}
			if placed := st.Bundle("b1").Replicas[0].Complete(); placed != tc.want.consumerPlaced {
				t.Errorf("consumer placed %t, want %t", placed, tc.want.consumerPlaced)
			}
			var events int
			for _, e := range st.Events(0, 0) {
				if e.Type == "serviceUpdated" {
					events++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.update]; events != want {
				t.Errorf("%d serviceUpdated events, want %d", events, want)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestServiceUpdateUnchangedIsQuiet: an apply that changes nothing the
// instances take (here only the constraints, which the leader enforces)
// relaunches nothing and records nothing.
func TestServiceUpdateUnchangedIsQuiet(t *testing.T) {
	h, svc := updateHarness(t)
	before := h.fsm.State().ServiceAssignments("sc")
	svc.Constraints = []string{`node.labels["az"] == "az1"`}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc, Update: true})
	st := h.fsm.State()
	if after := st.ServiceAssignments("sc"); !slices.Equal(before, after) {
		t.Fatalf("assignments rewritten: %+v", after)
	}
	for _, e := range st.Events(0, 0) {
		if e.Type == "serviceUpdated" {
			t.Fatalf("event for a change no instance takes: %+v", e)
		}
	}
}
