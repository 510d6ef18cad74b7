package fsm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// valDigest is a well-formed digest numbered n.
func valDigest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// valTemplates: "web" keeps two compose versions (1, then 2, the latest),
// "mod" one wasm version (3).
func valTemplates() []any {
	return []any{
		&Template{Name: "web", Versions: []TemplateVersion{
			{Digest: valDigest(1), Runtime: "compose", Files: 1, Size: 10},
			{Digest: valDigest(2), Runtime: "compose", Files: 2, Size: 20},
		}},
		&Template{Name: "mod", Versions: []TemplateVersion{{Digest: valDigest(3), Runtime: "wasm", Files: 1, Size: 30}}},
	}
}

// valRuntimePools: "rt" (cluster) has a compose node and a plain one,
// "rtburst" (elastic) an instance type with docker and compose.
func valRuntimePools() []*Pool {
	return []*Pool{
		{Name: "rt", Kind: PoolCluster},
		{Name: "rtburst", Kind: PoolElastic, InstanceTypes: []InstanceType{
			{Name: "ctr", TotalCapacity: 8000, TotalCores: 8, Runtimes: []string{"docker", "compose"}},
		}},
	}
}

func valRuntimeNodes() []*Node {
	compose := valNode("r1", "rt", "aws", 8000, 8)
	compose.Runtimes = []string{"exec", "Compose", "container"}
	return []*Node{compose, valNode("r2", "rt", "aws", 8000, 8)}
}

// valTemplateJob is a job running template ref.
func valTemplateJob(name, ref string) Job {
	return Job{Name: name, Launch: Launch{Kind: LaunchProductTemplate, Ref: ref,
		Parameters: map[string]string{"PORT": "8080", "_x1": "y"}, Tags: map[string]string{"channel": "one"},
		StartDateTime: "2030-01-01T00:00:00Z", StopDateTime: "2030-01-02T00:00:00Z"}}
}

var launchCases = []struct {
	name             string
	edit             func(s *BundleSpec)
	errors, warnings []string
}{
	{"template by name", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
	}, nil, nil},
	{"template pinned", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web@"+valDigest(1))}
	}, nil, nil},
	{"template missing", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "ghost")}
	},
		[]string{CodeUnknownTemplate}, nil},
	{"template version of another name", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web@"+valDigest(3))}
	},
		[]string{CodeUnknownTemplate}, nil},
	{"bad ref", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "Web@sha1:00")}
	}, []string{CodeInvalidTemplateRef}, nil},
	{"bad digest", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web@sha256:ABC")}
	}, []string{CodeInvalidTemplateRef}, nil},
	{"no ref", func(s *BundleSpec) { s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "")} }, []string{CodeInvalidTemplateRef}, nil},
	{"bad parameter keys", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Parameters = map[string]string{"1X": "", "a-b": "", "ok_1": ""}
	}, []string{CodeInvalidParameterKey, CodeInvalidParameterKey}, nil},
	{"reserved parameter names", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Parameters = map[string]string{"AMSERVER_ROLE": "primary", "docker_host": "tcp://x", "Path": "/", "ok": ""}
	}, []string{CodeInvalidParameterKey}, nil},
	{"parameter names near reserved ones", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Parameters = map[string]string{"AMSERVER": "", "PATHS": "", "MY_DOCKER_HOST": "", "COMPOSE": ""}
	}, nil, nil},
	{"tags that reach the workload as one variable", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Tags = map[string]string{"a-b": "dash", "a_b": "under", "A_B": "upper", "a.c": "dot"}
	}, nil, []string{CodeTagCollision, CodeTagCollision}},
	{"parameter value with newline", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Parameters["PORT"] = "1\n2"
	}, valIR, nil},
	{"compose parameter values no .env can hold", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Parameters = map[string]string{"A": "${HOME}", "B": "it's $5", "C": `C:\dir\`, "OK": "a b $c"}
	}, []string{CodeInvalidRequirement, CodeInvalidRequirement, CodeInvalidRequirement}, nil},
	{"compose parameter values a .env holds", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web@"+valDigest(1))}
		s.Jobs[0].Launch.Parameters = map[string]string{"A": "$HOME", "B": `say "hi"`, "C": "it's", "D": `a\b`}
	}, nil, nil},
	{"wasm parameters take any value", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "mod")}
		s.Jobs[0].Launch.Parameters = map[string]string{"A": "${HOME}", "B": "it's $5"}
	}, nil, []string{CodeUnsatisfiableRuntime}},
	{"stop before start", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.StopDateTime = s.Jobs[0].Launch.StartDateTime
	}, valIR, nil},
	{"bad start time", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.StartDateTime = "tomorrow"
	}, valIR, nil},
	{"job stops before the bundle starts", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", []Job{valTemplateJob("a", "web")}
		s.StartAt, s.StopAt = launchTime("2031-01-01T00:00:00Z"), 0
	}, valIR, nil},
	{"mixed shapes: template with driver", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Driver = DriverExec
	}, valIR, nil},
	{"mixed shapes: template with job", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Launch.Job = &LegacyJob{Driver: DriverNone}
	}, valIR, nil},
	{"mixed shapes: legacy with ref", func(s *BundleSpec) {
		s.Jobs[3].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverNone}, Ref: "web"}
	}, valIR, nil},
	{"mixed shapes: job and driver", func(s *BundleSpec) {
		s.Jobs[3].Launch = Launch{Driver: DriverNone, Job: &LegacyJob{Driver: DriverNone}}
	}, valIR, nil},
	{"unknown kind", func(s *BundleSpec) { s.Jobs[3].Launch = Launch{Kind: "vm"} }, valIR, nil},
	{"kind missing", func(s *BundleSpec) { s.Jobs[3].Launch = Launch{Ref: "web"} }, valIR, nil},
	{"docker with image", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", valJobs("a")
		s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker, Image: "enc:1"}}
	}, nil, nil},
	{"docker without image", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", valJobs("a")
		s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker}}
	}, valIR, nil},
	{"exec with an image", func(s *BundleSpec) {
		s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverExec, Command: []string{"x"}, Image: "i"}}
	}, valIR, nil},
	{"runtime oneOf with aliases", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", valJobs("a")
		s.Jobs[0].Runtime = &RuntimeRequirement{OneOf: []string{"WASMTIME", "container"}}
	}, nil, nil},
	{"oneOf leaving out a template's runtime", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Runtime = &RuntimeRequirement{OneOf: []string{"exec"}}
	}, []string{CodeUnknownRuntime}, nil},
	{"oneOf naming a template's runtime among others", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "web")}
		s.Jobs[0].Runtime = &RuntimeRequirement{OneOf: []string{"exec", "Compose"}}
	}, nil, nil},
	{"oneOf leaving out a legacy driver", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", valJobs("a")
		s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker, Image: "enc:1"}}
		s.Jobs[0].Runtime = &RuntimeRequirement{OneOf: []string{"exec"}}
	}, []string{CodeUnknownRuntime}, nil},
	{"oneOf naming a legacy driver by its alias", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", valJobs("a")
		s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker, Image: "enc:1"}}
		s.Jobs[0].Runtime = &RuntimeRequirement{OneOf: []string{"container"}}
	}, nil, nil},
	{"unknown runtime", func(s *BundleSpec) { s.Jobs[3].Runtime = &RuntimeRequirement{OneOf: []string{"jvm"}} },
		[]string{CodeUnknownRuntime}, nil},
	{"empty oneOf", func(s *BundleSpec) { s.Jobs[3].Runtime = &RuntimeRequirement{} }, []string{CodeUnknownRuntime}, nil},
	{"wasm in a cluster pool without it warns", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rt", 0, 0, []Job{valTemplateJob("a", "mod")}
	},
		nil, []string{CodeUnsatisfiableRuntime}},
	{"docker where nodes list no runtimes warns", func(s *BundleSpec) {
		s.Jobs[3].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverDocker, Image: "x"}}
	}, nil, []string{CodeUnsatisfiableRuntime}},
	{"exec where nodes list no runtimes", func(s *BundleSpec) {}, nil, nil},
	{"wasm in an elastic pool without it errs", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rtburst", 0, 0, []Job{valTemplateJob("a", "mod")}
	},
		[]string{CodeUnsatisfiableRuntime}, nil},
	{"compose in an elastic pool with it", func(s *BundleSpec) {
		s.Pool, s.StartAt, s.StopAt, s.Jobs = "rtburst", 0, 0, []Job{valTemplateJob("a", "web")}
	}, nil, nil},
	{"exec in an elastic pool whose types list others", func(s *BundleSpec) {
		s.Pool, s.Jobs, s.Resilience = "rtburst", valJobs("a"), nil
		s.Jobs[0].Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverExec, Command: []string{"x"}}}
	}, []string{CodeUnsatisfiableRuntime}, nil},
	{"pve-vm only on proxmox", func(s *BundleSpec) {
		s.Pool, s.Jobs = "rt", valJobs("a")
		s.Jobs[0].Runtime = &RuntimeRequirement{OneOf: []string{"pve-vm"}}
	}, nil, []string{CodeUnsatisfiableRuntime}},
}

func TestValidateLaunch(t *testing.T) {
	st := valFixture(t)
	for _, tc := range launchCases {
		t.Run(tc.name, func(t *testing.T) {
			spec := valSpec()
			tc.edit(spec)
			got := Validate(spec, st, valExprs{})
			if gotErr, gotWarn := valCodes(got.Errors), valCodes(got.Warnings); !slices.Equal(gotErr, tc.errors) || !slices.Equal(gotWarn, tc.warnings) {
				t.Fatalf("errors %v warnings %v, want %v %v\n%+v", gotErr, gotWarn, tc.errors, tc.warnings, got)
			}
		})
	}
}

func TestNormalizeLaunch(t *testing.T) {
	none := Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverNone}}
	cases := []struct {
		name    string
		in, out Launch
	}{
		{"empty is legacy none", Launch{}, none},
		{"older shape", Launch{Driver: DriverExec, Command: []string{"x"}, Env: map[string]string{"A": "1"}},
			Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverExec, Command: []string{"x"}, Env: map[string]string{"A": "1"}}}},
		{"older shape without driver", Launch{Command: []string{"x"}},
			Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverNone, Command: []string{"x"}}}},
		{"empty lists as msgpack decodes them", Launch{Command: []string{}, Env: map[string]string{}, Parameters: map[string]string{}}, none},
		{"legacy without job", Launch{Kind: LaunchLegacy}, none},
		{"a job alone is legacy", Launch{Job: &LegacyJob{Driver: DriverExec, Command: []string{"x"}}},
			Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverExec, Command: []string{"x"}}}},
		{"a job without a driver runs none", Launch{Job: &LegacyJob{}}, none},
		{"template stop time becomes a tag", Launch{Kind: LaunchProductTemplate, Ref: "web", StopDateTime: "2030-01-01T00:00:00Z"},
			Launch{Kind: LaunchProductTemplate, Ref: "web", StopDateTime: "2030-01-01T00:00:00Z",
				Tags: map[string]string{TagStopDateTime: "2030-01-01T00:00:00Z"}}},
		{"mixed stays mixed", Launch{Kind: LaunchProductTemplate, Ref: "web", Driver: DriverExec},
			Launch{Kind: LaunchProductTemplate, Ref: "web", Driver: DriverExec}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			NormalizeLaunch(&in)
			if !valEqualJSON(t, in, tc.out) {
				t.Fatalf("normalized %+v, want %+v", in, tc.out)
			}
			again := in
			NormalizeLaunch(&again)
			if !valEqualJSON(t, again, in) {
				t.Fatal("NormalizeLaunch is not idempotent")
			}
		})
	}
	shared := &LegacyJob{}
	l := Launch{Kind: LaunchLegacy, Job: shared}
	NormalizeLaunch(&l)
	if shared.Driver != "" || l.Job.Driver != DriverNone {
		t.Fatal("NormalizeLaunch wrote through a shared job")
	}
}

func TestStripReservedTags(t *testing.T) {
	spec := &BundleSpec{Tags: map[string]string{"__a": "1", "team": "x"},
		Jobs: []Job{valTemplateJob("j", "web")}}
	spec.Jobs[0].Launch.Tags = map[string]string{"__stopDateTime": "2000-01-01T00:00:00Z", "__b": "", "c": "d"}
	shared := spec.Jobs[0].Launch.Tags
	got := StripReservedTags(spec)
	if codes := valCodes(got); !slices.Equal(codes, []string{CodeReservedTag, CodeReservedTag, CodeReservedTag}) {
		t.Fatalf("findings %+v", got)
	}
	if got[1].Job != "j" || !strings.Contains(got[1].Message, "__b") {
		t.Fatalf("finding %+v", got[1])
	}
	if len(spec.Tags) != 1 || len(spec.Jobs[0].Launch.Tags) != 1 || len(shared) != 3 {
		t.Fatalf("tags %v %v (shared map %v)", spec.Tags, spec.Jobs[0].Launch.Tags, shared)
	}
	// The user's __stopDateTime is gone; Normalize sets the server's own.
	Normalize(spec)
	if v := spec.Jobs[0].Launch.Tags[TagStopDateTime]; v != "2030-01-02T00:00:00Z" {
		t.Fatalf("__stopDateTime = %q", v)
	}
	if out := WithoutReservedTags(spec.Jobs[0].Launch.Tags); len(out) != 1 || out["c"] != "d" {
		t.Fatalf("without reserved: %v", out)
	}
}

func TestEffectiveTimes(t *testing.T) {
	at := launchTime
	spec := &BundleSpec{StartAt: at("2030-01-01T06:00:00Z"), StopAt: at("2030-01-03T00:00:00Z"),
		Jobs: []Job{valTemplateJob("a", "web"), valTemplateJob("b", "web"), {Name: "c"}}}
	spec.Jobs[1].Launch.StartDateTime = "2030-01-01T12:00:00+01:00"
	spec.Jobs[1].Launch.StopDateTime = "2030-01-02T12:00:00Z"
	if got, want := spec.EffectiveStart(), at("2030-01-01T11:00:00Z"); got != want {
		t.Fatalf("start %d, want the latest job start %d", got, want)
	}
	if got, want := spec.EffectiveStop(), at("2030-01-02T00:00:00Z"); got != want {
		t.Fatalf("stop %d, want the earliest job stop %d", got, want)
	}
	plain := &BundleSpec{Jobs: valJobs("x")}
	if plain.EffectiveStart() != 0 || plain.EffectiveStop() != 0 {
		t.Fatal("a bundle without times has none")
	}
}

func TestParseTemplateRef(t *testing.T) {
	for ref, ok := range map[string]bool{
		"web": true, "web@" + valDigest(7): true, "": false, "Web": false, "web@": false, "web@sha256:": false,
		"web@" + strings.ToUpper(valDigest(7)): false, "web@sha512:" + strings.Repeat("0", 64): false, "a/b": false,
	} {
		if _, _, err := ParseTemplateRef(ref); (err == nil) != ok {
			t.Errorf("ParseTemplateRef(%q) = %v, want ok %v", ref, err, ok)
		}
	}
}

func TestRuntimeMatching(t *testing.T) {
	lookup := func(ref string) string {
		return map[string]string{"web": "compose", "mod": "wasm"}[ref]
	}
	node := func(kind string, rts ...string) RuntimeSet { return OfferedRuntimes(rts, kind) }
	job := func(l Launch, oneOf ...string) Job {
		j := Job{Launch: l}
		if oneOf != nil {
			j.Runtime = &RuntimeRequirement{OneOf: oneOf}
		}
		NormalizeLaunch(&j.Launch)
		return j
	}
	tpl := func(ref string) Launch { return Launch{Kind: LaunchProductTemplate, Ref: ref} }
	legacy := func(d string) Launch { return Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: d}} }
	cases := []struct {
		name string
		node RuntimeSet
		job  Job
		fits bool
	}{
		{"none fits anything", node(""), job(Launch{}), true},
		{"old node runs exec", node(""), job(legacy(DriverExec)), true},
		{"old node runs no docker", node(""), job(legacy(DriverDocker)), false},
		{"alias container", node("", "Container"), job(legacy(DriverDocker)), true},
		{"alias wasmtime", node("", "wasmtime"), job(tpl("mod")), true},
		{"compose template", node("", "compose"), job(tpl("web")), true},
		{"listed runtimes replace exec", node("", "compose"), job(legacy(DriverExec)), false},
		{"oneOf overrides launch", node("", "wasm"), job(legacy(DriverExec), "WASM", "docker"), true},
		{"unknown template fits nothing", node("", "compose", "wasm", "exec", "docker"), job(tpl("ghost")), false},
		{"pve on proxmox", node("proxmox"), job(Launch{}, "pve-vm"), true},
		{"pve elsewhere", node("", "pve-ct"), job(Launch{}, "pve-ct"), false},
	}
	for _, tc := range cases {
		if got := tc.node.Fits(JobRuntimeNeed(&tc.job, lookup)); got != tc.fits {
			t.Errorf("%s: fits %v, want %v", tc.name, got, tc.fits)
		}
	}
	for l, want := range map[*Launch]string{
		new(tpl("web")): "compose", new(legacy(DriverDocker)): "docker", {}: "none", new(tpl("ghost")): "",
	} {
		if got := LaunchRuntime(l, lookup); got != want {
			t.Errorf("LaunchRuntime(%+v) = %q, want %q", *l, got, want)
		}
	}
}
