package worker

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

func TestDotenvLine(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"plain-1.2:3@x/y,z+%=", "K=plain-1.2:3@x/y,z+%="},
		{"", "K=''"},
		{"a $b # c", "K='a $b # c'"},
		{"l1\nl2", "K='l1\nl2'"},
		{`C:\dir\x`, `K='C:\dir\x'`},
		{`it's "q"`, `K="it's \"q\""`},
		{"it's\nok", `K="it's\nok"`},
	} {
		got, err := dotenvLine(envVar{"K", tc.value})
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.value, got, err, tc.want)
		}
	}
	for _, bad := range []string{"${HOME}", "it's $5", `it's \n`, `a\\b`, `ends\`, "nul\x00", "cr\r", "\xff"} {
		if got, err := dotenvLine(envVar{"K", bad}); err == nil {
			t.Errorf("%q: accepted as %q", bad, got)
		}
	}
}

func TestTemplateEnv(t *testing.T) {
	a := api.Assignment{ID: "b:0:j@n", BundleID: "b", Job: "j", NodeID: "n", Role: api.RoleBackup, Epoch: 7,
		Launch: api.Launch{Kind: api.LaunchProductTemplate, Parameters: map[string]string{"B": "2", "A": "1"},
			Tags: map[string]string{"team": "x", "on-call.pager": "y", "on_call_pager": "z", "__hidden": "h", "__stopDateTime": "T"}}}
	params, ident, warnings, err := templateEnv(a)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params, []envVar{{"A", "1"}, {"B", "2"}}) {
		t.Fatalf("params %v", params)
	}
	want := []envVar{{"AMSERVER_BUNDLE", "b"}, {"AMSERVER_JOB", "j"}, {"AMSERVER_ROLE", "backup"},
		{"AMSERVER_ASSIGNMENT", "b:0:j@n"}, {"AMSERVER_NODE", "n"}, {"AMSERVER_EPOCH", "7"},
		{"AMSERVER_TAG_ON_CALL_PAGER", "y"}, {"AMSERVER_TAG_TEAM", "x"}, {envStopDateTime, "T"}}
	if !slices.Equal(ident, want) {
		t.Fatalf("identity and tags\n got %v\nwant %v", ident, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "on_call_pager") {
		t.Fatalf("warnings %v", warnings)
	}
	for _, bad := range []string{"AMSERVER_ROLE", "amserver_x", "COMPOSE_FILE", "DOCKER_HOST", "PATH", "1X", "A-B", ""} {
		a.Launch.Parameters = map[string]string{bad: "v"}
		if _, _, _, err := templateEnv(a); err == nil {
			t.Errorf("parameter %q accepted", bad)
		}
	}
}

func TestDotenvKeepsParametersStrictAndTagsLenient(t *testing.T) {
	body, warnings, err := dotenv([]envVar{{"P", "ok"}}, []envVar{{"AMSERVER_TAG_X", "${nope}"}})
	if err != nil || len(warnings) != 1 || strings.Contains(string(body), "nope") {
		t.Fatalf("a bad tag: %q %v %v", body, warnings, err)
	}
	if _, _, err := dotenv([]envVar{{"P", "${nope}"}}, nil); err == nil {
		t.Fatal("a parameter that cannot be written was accepted")
	}
}

func TestTaskName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	seen := map[string]string{}
	for _, id := range []string{"b1:0:enc@w1", "b1_0_enc_w1", "B1:0:ENC@W1", strings.Repeat("x", 300), "ünï:cødé", ""} {
		n := taskName(id)
		if !valid.MatchString(n) || len(n) > 60 {
			t.Errorf("%q → %q: not a valid project name", id, n)
		}
		if prev, ok := seen[n]; ok {
			t.Errorf("%q and %q share %q", prev, id, n)
		}
		seen[n] = id
		if taskName(id) != n {
			t.Errorf("%q: not stable", id)
		}
	}
}

func TestRuntimeOf(t *testing.T) {
	for _, tc := range []struct {
		a    api.Assignment
		want string
	}{
		{api.Assignment{Runtime: "Compose"}, api.RuntimeCompose},
		{api.Assignment{Runtime: "wasmtime"}, api.RuntimeWasm},
		{api.Assignment{Runtime: "container"}, api.RuntimeDocker},
		{api.Assignment{Launch: api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: "exec"}}}, api.RuntimeExec},
		{api.Assignment{Launch: api.Launch{Driver: "docker"}}, api.RuntimeDocker},
		{api.Assignment{}, runtimeNone},
		{api.Assignment{Launch: api.Launch{Kind: api.LaunchProductTemplate}}, ""},
	} {
		if got := runtimeOf(tc.a); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestParseRef(t *testing.T) {
	d := artifact.Digest([]byte("x"))
	if name, digest, err := parseRef("web@" + d); err != nil || name != "web" || digest != d {
		t.Fatalf("%s %s %v", name, digest, err)
	}
	for _, bad := range []string{"web", "@" + d, "web@sha256:abc", "web@md5:" + d[7:], "web@" + strings.ToUpper(d)} {
		if _, _, err := parseRef(bad); !isPermanent(err) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// lyingSource answers any digest with the same bytes.
type lyingSource struct{ body []byte }

func (s lyingSource) TemplateArchive(context.Context, string, string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(s.body)), nil
}

func TestTemplateCacheChecksTheDigest(t *testing.T) {
	c := newTemplateCache(t.TempDir(), lyingSource{body: []byte("evil")})
	if _, _, err := c.get(context.Background(), "web@"+artifact.Digest([]byte("good"))); err == nil || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("bytes of another digest accepted: %v", err)
	}
	big := lyingSource{body: make([]byte, artifact.MaxArchive+1)}
	c = newTemplateCache(t.TempDir(), big)
	if _, _, err := c.get(context.Background(), "web@"+artifact.Digest(big.body)); err == nil {
		t.Fatal("an archive over the limit was kept")
	}
}

func TestMaterializeRefusesTheWrongRuntime(t *testing.T) {
	archive := tarball(t, map[string][]byte{"main.wasm": []byte("\x00asm")})
	_, err := materialize(archive, artifact.Digest(archive), t.TempDir(), artifact.RuntimeCompose)
	if !isPermanent(err) || !strings.Contains(err.Error(), "wasm") {
		t.Fatalf("got %v", err)
	}
}

func TestComposeOverride(t *testing.T) {
	out, err := composeOverride([]string{"web", "db"}, map[string]string{labelBundle: "b$1"},
		[]envVar{{"AMSERVER_TAG_X", "a$b"}}, true, 512)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Labels      map[string]string `json:"labels"`
			Environment map[string]string `json:"environment"`
			PullPolicy  string            `json:"pull_policy"`
			MemLimit    string            `json:"mem_limit"`
			MemSwap     string            `json:"memswap_limit"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"web", "db"} {
		svc := doc.Services[s]
		if svc.Labels[labelBundle] != "b$$1" || svc.Environment["AMSERVER_TAG_X"] != "a$$b" || svc.PullPolicy != "never" ||
			svc.MemLimit != "512m" || svc.MemSwap != "512m" {
			t.Fatalf("%s: %+v\n%s", s, svc, out)
		}
	}
	out, _ = composeOverride([]string{"web"}, nil, nil, false, 0)
	if strings.Contains(string(out), "pull_policy") || strings.Contains(string(out), "mem") {
		t.Fatalf("pull_policy written for compose v1, or a memory limit for a job without one:\n%s", out)
	}
}

func TestDetectRuntimes(t *testing.T) {
	got := DetectRuntimes(context.Background())
	if !slices.Contains(got, api.RuntimeExec) || !slices.Contains(got, api.RuntimeWasm) {
		t.Fatalf("exec and wasm are always there: %v", got)
	}
	if dockerAnswers(context.Background()) != slices.Contains(got, api.RuntimeDocker) {
		t.Fatalf("docker detected wrongly: %v", got)
	}
}

// TestComposeEnvKeepsTheTemplatesDefaults: a template's own .env stays in
// the project's .env, before amserver's lines, so that what it sets is a
// default the launch's parameters override (compose lets a later line of a
// .env win) and the identity cannot be overridden by the template.
func TestComposeEnvKeepsTheTemplatesDefaults(t *testing.T) {
	archive := tarball(t, map[string][]byte{
		"compose.yaml": []byte("services:\n  app:\n    image: x\n"),
		".env":         []byte("CHANNEL=from-template\nexport DOCKER_HOST=tcp://elsewhere:2375\nBITRATE=1234\nAMSERVER_ROLE=evil"), // no final newline
	})
	dir := t.TempDir()
	digest := artifact.Digest(archive)
	if _, err := materialize(archive, digest, dir, api.RuntimeCompose); err != nil {
		t.Fatal(err)
	}
	base, ok, err := artifact.RootFile(archive, ".env")
	if err != nil || !ok {
		t.Fatalf("the template's .env: %v %v", ok, err)
	}
	b := &composeBackend{compose: composeCLI{major: 1}, logger: slog.New(slog.DiscardHandler)}
	a := assignment("n1", "b1", "app", composeLaunch("web@"+digest, map[string]string{"BITRATE": "9"}), api.RuntimeCompose)
	stack := filepath.Join(dir, stackDir)
	if err := b.writeProjectFiles(a, "spec", stack, []string{"app"}, base); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(stack, ".env"))
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{} // what compose reads: the last line of a name wins
	for _, line := range strings.Split(string(body), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			last[k] = v
		}
	}
	want := map[string]string{"CHANNEL": "from-template", "BITRATE": "9", "AMSERVER_ROLE": "primary", "export DOCKER_HOST": ""}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("%s reads %q, want %q, in:\n%s", k, last[k], v, body)
		}
	}
}
