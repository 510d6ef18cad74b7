package fsm

import "testing"

// TestAdmissionRulesLeaveReplayAlone: the API refuses a launch no process
// could start (Validate), but the FSM applies a create that holds one, as
// a server from before the rule committed it: a replica replaying that
// entry must end where the others did.
func TestAdmissionRulesLeaveReplayAlone(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	spec := testBundle("old", "p", testJob("j", 100, 0))
	spec.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverExec, Command: []string{"run"}, Env: map[string]string{"": "x"}}}
	if f := Validate(&spec, h.fsm.State(), nil); f.Valid() {
		t.Fatal("the API's validation admitted an env name that is empty")
	}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	if h.fsm.State().Bundle("old") == nil {
		t.Fatal("the committed create is missing after apply")
	}
}

// TestTemplateAdmissionLeavesReplayAlone: the API's validation refuses a
// template launch the worker could never run as asked (a compose parameter
// no .env can hold, a runtime.oneOf leaving out the template's runtime),
// but a create an older server committed with one still applies.
func TestTemplateAdmissionLeavesReplayAlone(t *testing.T) {
	cases := []struct {
		name string
		edit func(j *Job)
	}{
		{"compose parameter holding ${", func(j *Job) { j.Launch.Parameters = map[string]string{"CHANNEL": "${HOME}"} }},
		{"oneOf leaving out compose", func(j *Job) { j.Runtime = &RuntimeRequirement{OneOf: []string{"exec"}} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
			h.push("web", composeTar(t, 1))
			spec := templateBundle("old", "web")
			tc.edit(&spec.Jobs[0])
			if f := Validate(&spec, h.fsm.State(), nil); f.Valid() {
				t.Fatal("the API's validation admitted it")
			}
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			if h.fsm.State().Bundle("old") == nil {
				t.Fatal("the committed create is missing after apply")
			}
		})
	}
}
