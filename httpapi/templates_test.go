package httpapi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

// entry is one tar entry; typ 0 is a regular file.
type entry struct {
	name, body, link string
	typ              byte
}

func tarBytes(entries ...entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link}
		if e.typ == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			panic(err)
		}
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// composeArchive is a compose template whose content differs by n.
func composeArchive(n int) []byte {
	return tarBytes(entry{name: "compose.yaml", body: fmt.Sprintf("services:\n  app:\n    image: app:%d\n", n)},
		entry{name: "conf/app.env", body: "A=1\n"})
}

func wasmArchive() []byte { return tarBytes(entry{name: "main.wasm", body: "\x00asm\x01\x00\x00\x00"}) }

func decodeTemplate(t *testing.T, raw []byte) api.Template {
	t.Helper()
	var out api.Template
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return out
}

func TestTemplatePushAndRead(t *testing.T) {
	e := leaderEnv(t)
	a1 := composeArchive(1)
	resp, raw := e.do("PUT", "/v1/templates/web", a1)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("push: %d %s", resp.StatusCode, raw)
	}
	first := decodeTemplate(t, raw)
	want := api.Template{Name: "web", Digest: artifact.Digest(a1), Runtime: "compose", Files: 2, Size: int64(len(a1)), CreateIndex: first.CreateIndex}
	if !equalJSON(first, want) || first.CreateIndex == 0 || resp.Header.Get(api.HeaderIndex) == "" {
		t.Fatalf("push answered %+v, want %+v", first, want)
	}
	// The same bytes again: the same answer, and no Raft entry.
	applies := e.b.applyCount()
	resp, raw = e.do("PUT", "/v1/templates/web", a1)
	if resp.StatusCode != http.StatusOK || !equalJSON(decodeTemplate(t, raw), first) || e.b.applyCount() != applies {
		t.Fatalf("identical push: %d %s (applies %d → %d)", resp.StatusCode, raw, applies, e.b.applyCount())
	}
	// A gzipped wasm module under another name.
	if resp, raw := e.do("PUT", "/v1/templates/mod", gzipped(wasmArchive())); resp.StatusCode != 201 || decodeTemplate(t, raw).Runtime != "wasm" {
		t.Fatalf("wasm push: %d %s", resp.StatusCode, raw)
	}
	a2 := composeArchive(2)
	e.do("PUT", "/v1/templates/web", a2)

	_, raw = e.do("GET", "/v1/templates", nil)
	var list []api.Template
	if err := json.Unmarshal(raw, &list); err != nil || len(list) != 2 || list[0].Name != "mod" || list[1].Digest != artifact.Digest(a2) || list[1].Versions != nil {
		t.Fatalf("list %s", raw)
	}
	resp, raw = e.do("GET", "/v1/templates/web", nil)
	got := decodeTemplate(t, raw)
	if resp.StatusCode != 200 || got.Digest != artifact.Digest(a2) || len(got.Versions) != 2 || got.Versions[0].Digest != first.Digest {
		t.Fatalf("show: %d %s", resp.StatusCode, raw)
	}
	for query, body := range map[string][]byte{"": a2, "?digest=" + first.Digest: a1} {
		resp, raw := e.do("GET", "/v1/templates/web/archive"+query, nil)
		if resp.StatusCode != 200 || !bytes.Equal(raw, body) || resp.Header.Get("Content-Type") != "application/octet-stream" ||
			resp.Header.Get("ETag") != `"`+artifact.Digest(body)+`"` {
			t.Fatalf("archive%s: %d %q %v", query, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header)
		}
	}
}

func TestTemplateDeleteWhileUsed(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	e.do("PUT", "/v1/templates/web", composeArchive(1))
	spec := validSpec("tb")
	spec.Jobs[0].Launch = api.Launch{Kind: api.LaunchProductTemplate, Ref: "web", Parameters: map[string]string{"PORT": "80"}}
	resp, raw := e.do("POST", "/v1/bundles", mustJSON(t, spec))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	var created api.CreateResponse
	_ = json.Unmarshal(raw, &created)
	if ref := created.Bundle.Jobs[0].Launch.Ref; ref != "web@"+artifact.Digest(composeArchive(1)) {
		t.Fatalf("stored ref %q", ref)
	}
	resp, raw = e.do("DELETE", "/v1/templates/web", nil)
	if resp.StatusCode != http.StatusConflict || errorBody(t, raw).Code != api.CodeInUse {
		t.Fatalf("delete while used: %d %s", resp.StatusCode, raw)
	}
	e.b.mustApply(t, fsm.DeleteBundleType, fsm.DeleteBundleRequest{ID: "tb"})
	e.b.mustApply(t, fsm.PurgeBundleType, fsm.PurgeBundleRequest{ID: "tb"})
	if resp, raw := e.do("DELETE", "/v1/templates/web", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, raw)
	}
	if resp, _ := e.do("GET", "/v1/templates/web", nil); resp.StatusCode != 404 {
		t.Fatalf("deleted template: %d", resp.StatusCode)
	}
}

// TestTemplateLaunchReadBack: reserved tags are stripped with a warning on
// the way in, the server's __stopDateTime is hidden on the way out but
// reaches the worker, and the older launch shape reads back as legacy.
func TestTemplateLaunchReadBack(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	e.do("PUT", "/v1/templates/web", composeArchive(1))
	spec := validSpec("tb")
	spec.Tags = map[string]string{"__owner": "x", "team": "a"}
	spec.Jobs[0].Launch = api.Launch{Kind: api.LaunchProductTemplate, Ref: "web", Tags: map[string]string{"__y": "1", "ch": "7"},
		StopDateTime: "2031-01-01T00:00:00Z"}
	old := validSpec("tb")
	old.Jobs[0].Launch = api.Launch{Driver: api.DriverNone}
	old.Jobs = append(old.Jobs, api.Job{Name: "legacy", Launch: api.Launch{Driver: api.DriverExec, Command: []string{"/bin/x"}}})
	spec.Jobs = append(spec.Jobs, old.Jobs[1])
	resp, raw := e.do("POST", "/v1/bundles", mustJSON(t, spec))
	var created api.CreateResponse
	if err := json.Unmarshal(raw, &created); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	var codes []string
	for _, w := range created.Warnings {
		codes = append(codes, w.Code)
	}
	// p1's nodes list no runtimes (exec only): the compose job is a warning.
	if !slices.Equal(codes, []string{fsm.CodeReservedTag, fsm.CodeReservedTag, fsm.CodeUnsatisfiableRuntime}) {
		t.Fatalf("warnings %+v", created.Warnings)
	}
	b := created.Bundle
	if len(b.Tags) != 1 || len(b.Jobs[0].Launch.Tags) != 1 || b.Jobs[0].Launch.StopDateTime == "" {
		t.Fatalf("read back tags %v %v", b.Tags, b.Jobs[0].Launch.Tags)
	}
	if l := b.Jobs[1].Launch; l.Kind != api.LaunchLegacy || l.Job == nil || l.Job.Driver != api.DriverExec || l.Driver != "" {
		t.Fatalf("older shape read back as %+v", l)
	}
	stored := e.b.State().Bundle("tb").Spec.Jobs[0].Launch.Tags
	if stored[fsm.TagStopDateTime] != "2031-01-01T00:00:00Z" || stored["__y"] != "" {
		t.Fatalf("stored tags %v: want the server's __stopDateTime only", stored)
	}
	// The validate endpoint reports the same warnings.
	_, raw = e.do("POST", "/v1/bundles/validate", mustJSON(t, spec))
	var v api.ValidateResponse
	if err := json.Unmarshal(raw, &v); err != nil || !v.Valid || len(v.Warnings) != 3 {
		t.Fatalf("validate %s", raw)
	}
}

// TestTemplateRoutesThroughAFollower: a push sent to a follower is
// forwarded whole (4 MiB allowed) and answered by the leader.
func TestTemplateRoutesThroughAFollower(t *testing.T) {
	leader := leaderEnv(t)
	fb := newTestBackend("s2")
	follower := newEnv(t, fb)
	fb.setFollower(raftstore.LeaderInfo{ID: "s1", RaftAddr: "s1:7071", HTTPAddr: leader.hs.URL}, 0)
	big := tarBytes(entry{name: "compose.yaml", body: "services:\n  a:\n    image: x\n"},
		entry{name: "blob.bin", body: string(bytes.Repeat([]byte{'x'}, artifact.MaxArchive-8*1024))})
	if len(big) > artifact.MaxArchive {
		t.Fatalf("fixture is %d bytes", len(big))
	}
	resp, raw := follower.do("PUT", "/v1/templates/big", big)
	if resp.StatusCode != 201 || decodeTemplate(t, raw).Size != int64(len(big)) {
		t.Fatalf("forwarded push: %d %.200s", resp.StatusCode, raw)
	}
	if leader.b.State().Template("big") == nil || fb.applyCount() != 0 {
		t.Fatal("the push was not applied by the leader")
	}
}

func TestTemplateACLs(t *testing.T) {
	e, secrets := aclEnv(t)
	push := func(kind string) int {
		resp, _ := e.do("PUT", "/v1/templates/web", composeArchive(1), api.HeaderToken, secrets[kind])
		return resp.StatusCode
	}
	for kind, want := range map[string]int{fsm.ACLRead: 403, fsm.ACLWorker: 403, fsm.ACLWrite: 201} {
		if got := push(kind); got != want {
			t.Errorf("push with a %s token: %d, want %d", kind, got, want)
		}
	}
	for _, tc := range []struct {
		method, path string
		want         map[string]int
	}{
		{"GET", "/v1/templates", map[string]int{"": 401, fsm.ACLRead: 200, fsm.ACLWorker: 403}},
		{"GET", "/v1/templates/web", map[string]int{fsm.ACLRead: 200, fsm.ACLWorker: 403}},
		{"GET", "/v1/templates/web/archive", map[string]int{"": 401, fsm.ACLRead: 200, fsm.ACLWorker: 200}},
		{"DELETE", "/v1/templates/web", map[string]int{fsm.ACLRead: 403, fsm.ACLWorker: 403, fsm.ACLWrite: 204}},
	} {
		for kind, want := range tc.want {
			var hdr []string
			if kind != "" {
				hdr = []string{api.HeaderToken, secrets[kind]}
			}
			if resp, raw := e.do(tc.method, tc.path, nil, hdr...); resp.StatusCode != want {
				t.Errorf("%s %s with a %q token: %d, want %d: %s", tc.method, tc.path, kind, resp.StatusCode, want, raw)
			}
		}
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestTemplateClient: the Go client's template calls against the real API.
func TestTemplateClient(t *testing.T) {
	e := leaderEnv(t)
	a1, a2 := composeArchive(1), composeArchive(2)
	first, err := e.c.PutTemplate(ctx(t), "web", bytes.NewReader(a1))
	if err != nil || first.Digest != artifact.Digest(a1) || first.Runtime != "compose" {
		t.Fatalf("put = %+v, %v", first, err)
	}
	if again, err := e.c.PutTemplate(ctx(t), "web", bytes.NewReader(a1)); err != nil || !equalJSON(again, first) {
		t.Fatalf("identical put = %+v, %v", again, err)
	}
	if _, err := e.c.PutTemplate(ctx(t), "web", bytes.NewReader(a2)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.PutTemplate(ctx(t), "bad", bytes.NewReader(tarBytes(entry{name: "../x"}))); !api.IsCode(err, api.CodeUnsafeArchivePath) {
		t.Fatalf("unsafe archive: %v", err)
	}
	list, meta, err := e.c.Templates(ctx(t), nil)
	if err != nil || len(list) != 1 || list[0].Digest != artifact.Digest(a2) || meta.Index == 0 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	tpl, _, err := e.c.Template(ctx(t), "web", nil)
	if err != nil || len(tpl.Versions) != 2 {
		t.Fatalf("get = %+v, %v", tpl, err)
	}
	rc, err := e.c.TemplateArchive(ctx(t), "web", first.Digest)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if !bytes.Equal(got, a1) {
		t.Fatal("the archive read back differs")
	}
	if err := e.c.DeleteTemplate(ctx(t), "web"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.Template(ctx(t), "web", nil); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("deleted: %v", err)
	}
}
