package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// tarEntries lists a tar.gz's entries as "name mode [-> link]" in order.
func tarEntries(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		e := h.Name + " " + h.FileInfo().Mode().String()
		if h.Linkname != "" {
			e += " -> " + h.Linkname
		}
		if !h.ModTime.Equal(h.ModTime.Truncate(0)) || h.ModTime.Unix() != 0 || h.Uid != 0 || h.Uname != "" {
			t.Fatalf("entry %s keeps time or owner: %+v", h.Name, h)
		}
		out = append(out, e)
	}
}

func templateDir(t *testing.T) string {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("compose.yaml", "services:\n  app:\n    image: x\n", 0o600)
	write("bin/run.sh", "#!/bin/sh\n", 0o700)
	write("conf/b.env", "B=1\n", 0o644)
	write("conf/a.env", "A=1\n", 0o644)
	if err := os.Symlink("conf/a.env", filepath.Join(dir, "app.env")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTemplatePushDirectory(t *testing.T) {
	f := newFake(t)
	answer := api.Template{Name: "live", Digest: sampleDigest(5), Runtime: "compose", Files: 4, Size: 300, CreateIndex: 12}
	f.reply("PUT /v1/templates/live", http.StatusCreated, answer)
	dir := templateDir(t)
	r := runCLI(t, f.srv.URL, "", "template", "push", dir, "--name", "live")
	if r.code != exitOK || !strings.Contains(r.stdout, `template "live" is `+sampleDigest(5)+" (compose, 4 files, 300 B, index 12)") {
		t.Fatalf("push: %+v", r)
	}
	first := f.last("PUT", "/v1/templates/live").body
	want := []string{"app.env Lrwxrwxrwx -> conf/a.env", "bin/ drwxr-xr-x", "bin/run.sh -rwxr-xr-x", "compose.yaml -rw-r--r--",
		"conf/ drwxr-xr-x", "conf/a.env -rw-r--r--", "conf/b.env -rw-r--r--"}
	if got := tarEntries(t, first); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("entries\n%v\nwant\n%v", got, want)
	}
	// An unchanged directory packs to the same bytes, whatever the times.
	now := fixtureNow
	_ = os.Chtimes(filepath.Join(dir, "compose.yaml"), now, now)
	runCLI(t, f.srv.URL, "", "template", "push", dir, "--name", "live")
	if again := f.last("PUT", "/v1/templates/live").body; !bytes.Equal(again, first) {
		t.Fatal("pushing an unchanged directory sent other bytes")
	}
	r = runCLI(t, f.srv.URL, "", "--json", "template", "push", dir, "--name", "live")
	var got api.Template
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Digest != answer.Digest || got.Files != answer.Files {
		t.Fatalf("--json: %q, %v", r.stdout, err)
	}
}

func TestTemplatePushFileAndUsage(t *testing.T) {
	f := newFake(t)
	f.reply("PUT /v1/templates/mod", http.StatusOK, api.Template{Name: "mod", Digest: sampleDigest(6), Runtime: "wasm", Files: 1, Size: 10})
	file := filepath.Join(t.TempDir(), "mod.tar")
	archive := []byte("an archive, sent as it is")
	if err := os.WriteFile(file, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, f.srv.URL, "", "template", "push", file, "--name", "mod"); r.code != exitOK {
		t.Fatalf("push file: %+v", r)
	}
	if got := f.last("PUT", "/v1/templates/mod"); !bytes.Equal(got.body, archive) {
		t.Fatalf("sent %q", got.body)
	}
	if r := runCLI(t, f.srv.URL, "from stdin", "template", "push", "-", "--name", "mod"); r.code != exitOK ||
		string(f.last("PUT", "/v1/templates/mod").body) != "from stdin" {
		t.Fatalf("push stdin: %+v", r)
	}
	before := len(f.seen())
	for _, args := range [][]string{
		{"template", "push", file}, // no --name
		{"template", "push", filepath.Join(t.TempDir(), "missing"), "--name", "mod"},
		{"template", "push", "--name", "mod"},
	} {
		if r := runCLI(t, f.srv.URL, "", args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want usage: %s", args, r.code, r.stderr)
		}
	}
	if len(f.seen()) != before {
		t.Fatal("a usage error sent a request")
	}
}

func TestTemplateRefusalsAndRemove(t *testing.T) {
	f := newFake(t)
	f.fail("PUT /v1/templates/bad", http.StatusBadRequest, api.CodeUnsafeArchivePath, `"../x" leaves the template's tree`)
	f.fail("DELETE /v1/templates/used", http.StatusConflict, api.CodeInUse, "in use: bundle b1 uses template used")
	f.on("DELETE /v1/templates/live", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	dir := templateDir(t)
	// A 400 is bad input, like a usage error: exit 2.
	if r := runCLI(t, f.srv.URL, "", "template", "push", dir, "--name", "bad"); r.code != exitUsage ||
		!strings.Contains(r.stderr, "leaves the template's tree") {
		t.Fatalf("refused push: %+v", r)
	}
	if r := runCLI(t, f.srv.URL, "", "template", "rm", "used"); r.code != exitConflict || !strings.Contains(r.stderr, "uses template") {
		t.Fatalf("rm in use: %+v", r)
	}
	if r := runCLI(t, f.srv.URL, "", "template", "rm", "live"); r.code != exitOK || !strings.Contains(r.stdout, `template "live" removed`) {
		t.Fatalf("rm: %+v", r)
	}
}

// TestRuntimeFlags: --runtime (repeatable) and --node-kind reach the
// inventory the worker registers.
func TestRuntimeFlags(t *testing.T) {
	var f inventoryFlags
	fl := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	f.register(fl)
	if err := fl.Parse([]string{"--cores", "2", "--runtime", "exec", "--runtime", "Compose", "--node-kind", "proxmox"}); err != nil {
		t.Fatal(err)
	}
	spec, err := f.spec("p", "az1", "c1")
	if err != nil || strings.Join(spec.Runtimes, ",") != "exec,Compose" || spec.Kind != api.NodeKindProxmox {
		t.Fatalf("spec %+v, %v", spec, err)
	}
	f.nodeKind = "vmware"
	if _, err := f.spec("p", "", ""); err == nil || !strings.Contains(err.Error(), "--node-kind") {
		t.Fatalf("bad kind: %v", err)
	}
	agent := newAgentCmd()
	for _, name := range []string{"runtime", "node-kind"} {
		if agent.Flags().Lookup(name) == nil {
			t.Errorf("agent has no --%s", name)
		}
	}
}

// TestTemplateExample: the example template packs into an archive the
// server accepts, and the example bundle that uses it is a valid spec.
func TestTemplateExample(t *testing.T) {
	archive, err := tarDir("../../examples/compose-stack")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := artifact.Inspect(archive); err != nil || info.Runtime != "compose" {
		t.Fatalf("example template: %+v, %v", info, err)
	}
	var spec api.BundleSpec
	a := &app{}
	if err := a.readInput("../../examples/bundle-template.json", "bundle", &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Jobs[0].Launch.Ref != "web" || spec.Jobs[0].Launch.Kind != api.LaunchProductTemplate {
		t.Fatalf("example bundle %+v", spec.Jobs)
	}
}

// TestMemoryFlag: --memory-mib sets the node's totalMemoryMiB; without it
// (or with 0) the worker registers what /proc/meminfo says.
func TestMemoryFlag(t *testing.T) {
	old := detectedMemoryMiB
	t.Cleanup(func() { detectedMemoryMiB = old })
	detectedMemoryMiB = func() int64 { return 3900 }
	for _, tc := range []struct {
		args []string
		want int64
	}{{nil, 3900}, {[]string{"--memory-mib", "0"}, 3900}, {[]string{"--memory-mib", "65536"}, 65536}} {
		var f inventoryFlags
		fl := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		f.register(fl)
		if err := fl.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		spec, err := f.spec("p", "", "")
		if err != nil || spec.TotalMemoryMiB != tc.want {
			t.Fatalf("%v: totalMemoryMiB %d, %v; want %d", tc.args, spec.TotalMemoryMiB, err, tc.want)
		}
	}
	if newAgentCmd().Flags().Lookup("memory-mib") == nil {
		t.Error("agent has no --memory-mib")
	}
}
