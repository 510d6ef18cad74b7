package httpapi

import (
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/fill"
)

// TestCodesAreTheAPIs: the codes the server answers for archives and
// launches are the api package's, which clients match on.
func TestCodesAreTheAPIs(t *testing.T) {
	for got, want := range map[string]string{
		artifact.CodeTooLarge: api.CodeTemplateTooLarge, artifact.CodeInvalidArchive: api.CodeInvalidArchive,
		artifact.CodeUnsafePath: api.CodeUnsafeArchivePath, artifact.CodeNoRuntime: api.CodeTemplateRuntimeUnknown,
		artifact.CodeAmbiguous: api.CodeTemplateRuntimeAmbiguous, artifact.CodeInvalidCompose: api.CodeInvalidComposeFile,
		artifact.CodeInvalidTemplate: api.CodeInvalidTemplateName,
		fsm.CodeInvalidTemplateRef:   api.FindingInvalidTemplateRef, fsm.CodeUnknownTemplate: api.FindingUnknownTemplate,
		fsm.CodeInvalidParameterKey: api.FindingInvalidParameterKey, fsm.CodeUnknownRuntime: api.FindingUnknownRuntime,
		fsm.CodeUnsatisfiableRuntime: api.FindingUnsatisfiableRuntime, fsm.CodeReservedTag: api.FindingReservedTag,
	} {
		if got != want {
			t.Errorf("code %q, api says %q", got, want)
		}
	}
	if templateBodyLimit != "4MiB" || artifact.MaxArchive != 4<<20 {
		t.Fatal("the push route's limit must be the archive limit")
	}
}

// TestNewFieldsConvert: the fields issue 17 added (the launch union, job
// runtimes, node runtimes and kind, assignment runtime) cross the API
// edge both ways; reserved tags stay out of bundle reads only.
func TestNewFieldsConvert(t *testing.T) {
	b := &fsm.Bundle{Spec: fsm.BundleSpec{ID: "b", Tags: map[string]string{"__x": "1", "a": "b"}, Jobs: []fsm.Job{{
		Name: "j", Runtime: &fsm.RuntimeRequirement{OneOf: []string{"wasm"}},
		Launch: fsm.Launch{Kind: fsm.LaunchProductTemplate, Ref: "web@" + fsmDigest(1), Parameters: map[string]string{"P": "1"},
			Tags: map[string]string{fsm.TagStopDateTime: "2030-01-01T00:00:00Z", "t": "v"}, StartDateTime: "2029-01-01T00:00:00Z",
			StopDateTime: "2030-01-01T00:00:00Z"},
	}}}}
	out := bundleToAPI(b)
	l := out.Jobs[0].Launch
	if out.Tags["__x"] != "" || l.Tags[fsm.TagStopDateTime] != "" || l.Tags["t"] != "v" || l.Ref != b.Spec.Jobs[0].Launch.Ref ||
		l.Parameters["P"] != "1" || l.StopDateTime == "" || out.Jobs[0].Runtime.OneOf[0] != "wasm" {
		t.Fatalf("bundle read %+v", out.Jobs[0])
	}
	if b.Spec.Jobs[0].Launch.Tags[fsm.TagStopDateTime] == "" {
		t.Fatal("converting a bundle changed the stored tags")
	}
	a := assignmentToAPI(&fsm.Assignment{ID: "a", Runtime: "compose", Launch: &b.Spec.Jobs[0].Launch})
	if a.Runtime != "compose" || a.Launch.Tags[fsm.TagStopDateTime] == "" {
		t.Fatalf("assignment %+v: workers see the runtime and __stopDateTime", a)
	}
	n := fill.New[fsm.Node](0)
	spec, err := nodeFromAPI(n.ID, nodeView{st: fsm.New(fsm.Config{}).State()}.node(n).NodeSpec)
	if err != nil || spec.Runtimes[1] != n.Runtimes[1] || spec.Kind != n.Kind {
		t.Fatalf("node round trip %+v, %v", spec, err)
	}
	p := fill.New[fsm.Pool](0)
	back, err := poolFromAPI(p.Name, poolToAPI(p))
	if err != nil || back.InstanceTypes[0].Runtimes[0] != p.InstanceTypes[0].Runtimes[0] || back.InstanceTypes[1].Kind != p.InstanceTypes[1].Kind {
		t.Fatalf("pool round trip %+v, %v", back.InstanceTypes, err)
	}
}
