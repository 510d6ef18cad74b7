package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/amserver/amserver/ledger"
)

func TestCreateResolvesTemplateRefs(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	d1 := h.push("web", composeTar(t, 1)).Version.Digest
	res := h.ok(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b1", "web")})
	if ref := res.Value.(*Bundle).Spec.Jobs[0].Launch.Ref; ref != "web@"+d1 {
		t.Fatalf("stored ref %q, want web@%s", ref, d1)
	}
	d2 := h.push("web", composeTar(t, 2)).Version.Digest
	// An identical retry, after a push, is still identical.
	if res := h.ok(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b1", "web")}); res.Created {
		t.Fatal("a retried create made a new bundle")
	}
	if ref := h.fsm.State().Bundle("b1").Spec.Jobs[0].Launch.Ref; ref != "web@"+d1 {
		t.Fatalf("a push changed a stored bundle's ref to %q", ref)
	}
	// A replace takes the latest.
	h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: templateBundle("b1", "web")})
	if ref := h.fsm.State().Bundle("b1").Spec.Jobs[0].Launch.Ref; ref != "web@"+d2 {
		t.Fatalf("replace stored %q, want web@%s", ref, d2)
	}
	for ref, code := range map[string]string{"ghost": CodeUnknownTemplate, "web@" + valDigest(9): CodeUnknownTemplate, "Web": CodeInvalidTemplateRef} {
		res := h.apply(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b2", ref)})
		var ve *ValidationError
		if !errors.As(res.Err, &ve) || ve.Findings.Errors[0].Code != code {
			t.Fatalf("ref %q: %v, want %s", ref, res.Err, code)
		}
	}
}

// TestRefResolutionProperty: whatever is pushed, created, retried or
// replaced, every stored template ref names a version its template keeps,
// and a bundle's refs change only when that bundle is replaced.
func TestRefResolutionProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt)
		h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
		names := []string{"web", "api"}
		kept := map[string]map[string]string{} // bundle → job → ref
		for step := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			name := rapid.SampledFrom(names).Draw(rt, "name")
			switch op := rapid.SampledFrom([]string{"push", "create", "replace"}).Draw(rt, "op"); op {
			case "push":
				h.push(name, composeTar(rt, rapid.IntRange(0, 5).Draw(rt, "content")))
			case "create", "replace":
				id := fmt.Sprintf("b%d", rapid.IntRange(0, 3).Draw(rt, "bundle"))
				ref := name
				if tpl := h.fsm.State().Template(name); tpl != nil && rapid.Bool().Draw(rt, "pinned") {
					ref += "@" + rapid.SampledFrom(versionDigests(tpl)).Draw(rt, "version")
				}
				typ, body := CreateBundleType, any(&CreateBundleRequest{Spec: templateBundle(id, ref)})
				if op == "replace" {
					typ, body = ReplaceBundleType, &ReplaceBundleRequest{Spec: templateBundle(id, ref)}
				}
				if res := h.apply(typ, body); res.Err == nil {
					kept[id] = map[string]string{"app": h.fsm.State().Bundle(id).Spec.Jobs[0].Launch.Ref}
				}
			}
			checkRefs(rt, h.fsm.State(), kept, step)
		}
	})
}

func checkRefs(t *rapid.T, st *State, kept map[string]map[string]string, step int) {
	for _, b := range st.Bundles("", "") {
		for _, j := range b.Spec.Jobs {
			ref := j.Launch.Ref
			if !strings.Contains(ref, "@") {
				t.Fatalf("step %d: bundle %s stores an unpinned ref %q", step, b.ID(), ref)
			}
			if _, _, ok := st.ResolveTemplate(ref); !ok {
				t.Fatalf("step %d: bundle %s pins %q, which is not kept", step, b.ID(), ref)
			}
			if want := kept[b.ID()][j.Name]; ref != want {
				t.Fatalf("step %d: bundle %s ref %q changed without a replace (was %q)", step, b.ID(), ref, want)
			}
		}
	}
}

// composeNode is a ready node that runs compose.
func composeNode(id string) Node {
	n := testNode(id, "p", "az1", "c1", 8000, 8)
	n.Runtimes = []string{"exec", "compose"}
	return n
}

func TestPlanRecheckRejectsAStaleRuntime(t *testing.T) {
	h := newHarness(t)
	h.readyNode(composeNode("n1"))
	h.push("web", composeTar(t, 1))
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b1", "web")})
	part := h.placeAll("b1", 0, "n1") // computed while n1 ran compose
	without := composeNode("n1")
	without.Runtimes = []string{"exec"}
	h.ok(RegisterNodeType, &RegisterNodeRequest{Node: without})
	res := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{part}}).Value.(*PlanResult)
	if len(res.Rejected) != 1 || !strings.Contains(res.Rejected[0].Reason, "runtime") {
		t.Fatalf("plan result %+v: want the part rejected on runtime", res)
	}
	if h.fsm.State().Bundle("b1").Replicas[0].Complete() {
		t.Fatal("a rejected part placed the bundle")
	}
	h.ok(RegisterNodeType, &RegisterNodeRequest{Node: composeNode("n1")})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	as := h.fsm.State().BundleAssignments("b1")
	if len(as) != 1 || as[0].Runtime != "compose" || as[0].Launch.Tags != nil || !strings.HasPrefix(as[0].Launch.Ref, "web@") {
		t.Fatalf("assignments %+v: want one compose assignment with the pinned ref", as)
	}
}

func TestAssignmentRuntimeOfLegacyLaunch(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8)) // no runtimes: exec and none
	exec := testJob("e", 100, 0)
	exec.Launch = Launch{Driver: DriverExec, Command: []string{"/bin/true"}} // the older shape
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", exec, testJob("n", 100, 0))})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b1", 0, "n1")}})
	got := map[string]string{}
	for _, a := range h.fsm.State().BundleAssignments("b1") {
		got[a.Job] = a.Runtime
		if a.Launch.Kind != LaunchLegacy || a.Launch.Job == nil || oldShape(a.Launch) {
			t.Fatalf("assignment launch %+v is not legacy", a.Launch)
		}
	}
	if got["e"] != "exec" || got["n"] != "none" {
		t.Fatalf("runtimes %v", got)
	}
	docker := testJob("d", 100, 0)
	docker.Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker, Image: "x"}}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b2", "p", docker)})
	res := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b2", 0, "n1")}}).Value.(*PlanResult)
	if len(res.Rejected) != 1 {
		t.Fatal("docker placed on a node without runtimes")
	}
}

func TestJobTimesDriveTheBundle(t *testing.T) {
	h := newHarness(t)
	h.readyNode(composeNode("n1"))
	h.push("web", composeTar(t, 1))
	at := launchTime
	spec := templateBundle("b1", "web")
	spec.Jobs[0].Launch.StartDateTime = "2030-01-01T00:00:00Z"
	spec.Jobs[0].Launch.StopDateTime = "2030-01-02T00:00:00Z"
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec, Now: at("2029-12-31T00:00:00Z")})
	b := h.fsm.State().Bundle("b1")
	if b.State != StateScheduled || b.Spec.Jobs[0].Launch.Tags[TagStopDateTime] != "2030-01-02T00:00:00Z" {
		t.Fatalf("bundle %s tags %v: want scheduled with __stopDateTime", b.State, b.Spec.Jobs[0].Launch.Tags)
	}
	h.ok(TimerType, &TimerRequest{Now: at("2030-01-01T00:00:01Z"), Start: []string{"b1"}})
	if s := h.fsm.State().Bundle("b1").State; s != StatePending {
		t.Fatalf("after the start time: %s", s)
	}
	h.ok(TimerType, &TimerRequest{Now: at("2030-01-01T23:00:00Z"), Stop: []string{"b1"}}) // early: nothing
	if h.fsm.State().Bundle("b1").Deleting {
		t.Fatal("an early stop timer started the deletion")
	}
	h.ok(TimerType, &TimerRequest{Now: at("2030-01-02T00:00:00Z"), Stop: []string{"b1"}})
	if !h.fsm.State().Bundle("b1").Deleting {
		t.Fatal("the job's stopDateTime did not start the deletion")
	}
}

// TestOldLogEntriesNormalize: commands written before the union existed
// (msgpack with {driver, command, env}) store legacy launches.
func TestOldLogEntriesNormalize(t *testing.T) {
	type oldLaunch struct {
		Driver  string            `json:"driver,omitempty"`
		Command []string          `json:"command,omitempty"`
		Env     map[string]string `json:"env,omitempty"`
	}
	type oldJob struct {
		Name         string         `json:"name"`
		Requirements ledger.Request `json:"requirements"`
		Launch       oldLaunch      `json:"launch"`
	}
	type oldSpec struct {
		ID   string   `json:"id"`
		Pool string   `json:"pool"`
		Jobs []oldJob `json:"jobs"`
	}
	type oldService struct {
		ID     string    `json:"id"`
		Pools  []string  `json:"pools"`
		Launch oldLaunch `json:"launch"`
	}
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	h.ok(CreateBundleType, struct{ Spec oldSpec }{oldSpec{ID: "b1", Pool: "p", Jobs: []oldJob{
		{Name: "e", Launch: oldLaunch{Driver: "exec", Command: []string{"/bin/x"}, Env: map[string]string{"A": "1"}}}}}})
	h.ok(UpsertServiceType, struct{ Service oldService }{oldService{ID: "s", Pools: []string{"p"}, Launch: oldLaunch{Driver: "none"}}})
	l := h.fsm.State().Bundle("b1").Spec.Jobs[0].Launch
	if l.Kind != LaunchLegacy || l.Job == nil || l.Job.Driver != "exec" || l.Job.Env["A"] != "1" || oldShape(&l) {
		t.Fatalf("stored launch %+v", l)
	}
	if s := h.fsm.State().Service("s").Launch; s.Kind != LaunchLegacy || s.Job == nil || s.Job.Driver != "none" {
		t.Fatalf("stored service launch %+v", s)
	}
}

// TestServicePlacementChecksRuntime: the FSM refuses a service on a node
// that does not run its driver, and fills its assignment's runtime.
func TestServicePlacementChecksRuntime(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8)) // no runtimes: exec
	svc := NodeService{ID: "mon", Pools: []string{"p"}, Launch: Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker, Image: "x"}}}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc})
	res := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{{ServiceID: "mon", Node: "n1"}}}}}).Value.(*PlanResult)
	if len(res.Rejected) != 1 {
		t.Fatal("a docker service placed on a node without docker")
	}
	svc.Launch = Launch{Driver: DriverExec, Command: []string{"/bin/x"}}
	h.ok(UpsertServiceType, &UpsertServiceRequest{Service: svc})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Services: []ServicePlacement{{ServiceID: "mon", Node: "n1"}}}}})
	if as := h.fsm.State().ServiceAssignments("mon"); len(as) != 1 || as[0].Runtime != "exec" {
		t.Fatalf("service assignments %+v", as)
	}
}
