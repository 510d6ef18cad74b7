package httpapi

import (
	"archive/tar"
	"fmt"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
)

// seedTemplate keeps template "web" and a bundle "bt" that uses it.
func seedTemplate(t *testing.T, e *env) {
	t.Helper()
	if resp, raw := e.do("PUT", "/v1/templates/web", composeArchive(1)); resp.StatusCode != 201 {
		t.Fatalf("seed template: %d %s", resp.StatusCode, raw)
	}
	spec := validSpec("bt")
	spec.Jobs[0].Launch = api.Launch{Kind: api.LaunchProductTemplate, Ref: "web"}
	if resp, raw := e.do("POST", bundles, mustJSON(t, spec)); resp.StatusCode != 201 {
		t.Fatalf("seed template bundle: %d %s", resp.StatusCode, raw)
	}
}

const templates = "/v1/templates"

// templateCases: archives refused at the edge, with their codes, and the
// template routes' other refusals.
func templateCases() []badCase {
	push := func(name string, status int, code string, archive []byte) badCase {
		return badCase{"template " + name, "PUT", templates + "/t9", string(archive), status, code, ""}
	}
	compose := entry{name: "compose.yaml", body: "services:\n  a:\n    image: x\n"}
	many := []entry{compose}
	for i := range artifact.MaxEntries {
		many = append(many, entry{name: fmt.Sprintf("f%d", i)})
	}
	return []badCase{
		push("dot-dot path", 400, artifact.CodeUnsafePath, tarBytes(compose, entry{name: "../x", body: "x"})),
		push("absolute path", 400, artifact.CodeUnsafePath, tarBytes(compose, entry{name: "/etc/x", body: "x"})),
		push("symlink to /etc", 400, artifact.CodeUnsafePath, tarBytes(compose, entry{name: "etc", typ: tar.TypeSymlink, link: "/etc"})),
		push("link leaving the tree", 400, artifact.CodeUnsafePath, tarBytes(compose, entry{name: "a/b", typ: tar.TypeSymlink, link: "../../x"})),
		push("device", 400, artifact.CodeUnsafePath, tarBytes(compose, entry{name: "dev", typ: tar.TypeChar})),
		push("fifo", 400, artifact.CodeUnsafePath, tarBytes(compose, entry{name: "pipe", typ: tar.TypeFifo})),
		push("compose not yaml", 400, artifact.CodeInvalidCompose, tarBytes(entry{name: "compose.yaml", body: "services: [\n"})),
		push("compose without services", 400, artifact.CodeInvalidCompose, tarBytes(entry{name: "compose.yml", body: "version: '3'\n"})),
		push("compose and wasm", 400, artifact.CodeAmbiguous, tarBytes(compose, entry{name: "main.wasm", body: "x"})),
		push("neither compose nor wasm", 400, artifact.CodeNoRuntime, tarBytes(entry{name: "README", body: "x"})),
		push("not a tar", 400, artifact.CodeInvalidArchive, []byte("this is not an archive, not even close to one")),
		push("empty body", 400, artifact.CodeInvalidArchive, nil),
		push("too many entries", 413, artifact.CodeTooLarge, tarBytes(many...)),
		push("5 MiB body", 413, api.CodeBodyTooLarge, []byte(strings.Repeat("x", 5<<20))),
		{"template bad name", "PUT", templates + "/Bad_Name", string(composeArchive(2)), 400, artifact.CodeInvalidTemplate, ""},
		{"template archive bad digest", "GET", templates + "/web/archive?digest=md5:00", "", 400, api.CodeBadRequest, ""},
		{"template archive unknown digest", "GET", templates + "/web/archive?digest=" + fsmDigest(7), "", 404, api.CodeNotFound, ""},
		{"template archive unknown template", "GET", templates + "/ghost/archive", "", 404, api.CodeNotFound, ""},
		{"get unknown template", "GET", templates + "/ghost", "", 404, api.CodeNotFound, ""},
		{"delete unknown template", "DELETE", templates + "/ghost", "", 404, api.CodeNotFound, ""},
		{"delete template in use", "DELETE", templates + "/web", "", 409, api.CodeInUse, ""},
	}
}

func fsmDigest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// launchCases: launches and runtimes refused by validation (422).
func launchCases() []badCase {
	v := validationCase
	tpl := func(ref string) api.Launch { return api.Launch{Kind: api.LaunchProductTemplate, Ref: ref} }
	return []badCase{
		v("ref to a missing template", fsm.CodeUnknownTemplate, func(s *api.BundleSpec) { s.Jobs[0].Launch = tpl("ghost") }),
		v("ref to a version not kept", fsm.CodeUnknownTemplate, func(s *api.BundleSpec) { s.Jobs[0].Launch = tpl("web@" + fsmDigest(3)) }),
		v("malformed ref", fsm.CodeInvalidTemplateRef, func(s *api.BundleSpec) { s.Jobs[0].Launch = tpl("web@latest") }),
		v("bad parameter key", fsm.CodeInvalidParameterKey, func(s *api.BundleSpec) {
			s.Jobs[0].Launch = tpl("web")
			s.Jobs[0].Launch.Parameters = map[string]string{"9LIVES": "x"}
		}),
		v("unknown runtime", fsm.CodeUnknownRuntime, func(s *api.BundleSpec) { s.Jobs[0].Runtime = &api.RuntimeRequirement{OneOf: []string{"jvm"}} }),
		v("mixed launch shapes", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) {
			s.Jobs[0].Launch = api.Launch{Kind: api.LaunchProductTemplate, Ref: "web", Driver: api.DriverExec}
		}),
		v("docker without image", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) {
			s.Jobs[0].Launch = api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: api.DriverDocker}}
		}),
		v("template stops before it starts", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) {
			s.Jobs[0].Launch = tpl("web")
			s.Jobs[0].Launch.StartDateTime, s.Jobs[0].Launch.StopDateTime = "2031-01-02T00:00:00Z", "2031-01-01T00:00:00Z"
		}),
		v("wasm in an elastic pool without it", fsm.CodeUnsatisfiableRuntime, func(s *api.BundleSpec) {
			s.Pool, s.Jobs = "el", s.Jobs[:1]
			s.Jobs[0].Runtime = &api.RuntimeRequirement{OneOf: []string{"wasm"}}
		}),
		{"launch unknown field", "POST", bundles, `{"pool":"p1","jobs":[{"name":"a","launch":{"kind":"legacy","jobb":{}}}]}`, 400, api.CodeBadRequest, ""},
		{"legacy job unknown field", "POST", bundles, `{"pool":"p1","jobs":[{"name":"a","launch":{"kind":"legacy","job":{"driver":"exec","cmd":["x"]}}}]}`, 400, api.CodeBadRequest, ""},
		{"node unknown runtime", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"runtimes":["exec","jvm"]}`, 422, api.CodeValidationFailed, ""},
		{"node pve without proxmox", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"runtimes":["pve-vm"]}`, 422, api.CodeValidationFailed, ""},
		{"node bad kind", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"kind":"vmware"}`, 422, api.CodeValidationFailed, ""},
		{"instance type unknown runtime", "PUT", "/v1/pools/p9", `{"kind":"elastic","instanceTypes":[{"name":"a","totalCapacity":1,"runtimes":["jvm"]}]}`, 422, api.CodeValidationFailed, ""},
		{"service template launch", "PUT", "/v1/services/s9", `{"pools":["p1"],"launch":{"kind":"productTemplate","ref":"web"}}`, 422, api.CodeValidationFailed, ""},
	}
}

// unstartableLaunchCases: a legacy launch no process could be started with
// (an env name empty or holding "=", a NUL anywhere), refused at submission
// rather than failing forever on its worker; services share the rule.
func unstartableLaunchCases() []badCase {
	v := validationCase
	legacy := func(driver string, command []string, image string, env map[string]string) func(s *api.BundleSpec) {
		return func(s *api.BundleSpec) {
			s.Jobs[0].Launch = api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: driver, Command: command, Image: image, Env: env}}
		}
	}
	exec := func(env map[string]string) func(s *api.BundleSpec) {
		return legacy(api.DriverExec, []string{"/bin/run"}, "", env)
	}
	replace := bundle(func(s *api.BundleSpec) { s.ID = ""; exec(map[string]string{"": "x"})(s) })
	return []badCase{
		v("exec env name empty", fsm.CodeInvalidRequirement, exec(map[string]string{"": "x"})),
		v("exec env name with =", fsm.CodeInvalidRequirement, exec(map[string]string{"A=B": "x"})),
		v("exec env name with NUL", fsm.CodeInvalidText, exec(map[string]string{"A\x00": "x"})),
		v("exec env value with NUL", fsm.CodeInvalidText, exec(map[string]string{"A": "x\x00y"})),
		v("exec command with NUL", fsm.CodeInvalidText, legacy(api.DriverExec, []string{"/bin/run\x00"}, "", nil)),
		v("docker image with NUL", fsm.CodeInvalidText, legacy(api.DriverDocker, nil, "nginx\x00", nil)),
		v("docker env name with =", fsm.CodeInvalidRequirement, legacy(api.DriverDocker, nil, "nginx", map[string]string{"=x": "y"})),
		{"422 older launch shape, argument with NUL", "POST", bundles,
			`{"pool":"p1","jobs":[{"name":"a","launch":{"driver":"exec","command":["run","a\u0000b"]}}]}`, 422, api.CodeValidationFailed, fsm.CodeInvalidText},
		{"422 replace with an empty env name", "PUT", bundles + "/b1", replace, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 service env name with =", "PUT", "/v1/services/s9",
			`{"pools":["p1"],"launch":{"kind":"legacy","job":{"driver":"exec","command":["run"],"env":{"A=B":"x"}}}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
	}
}
