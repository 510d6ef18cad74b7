package fsm

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// tarOf builds an uncompressed tar of the given files, in name order.
func tarOf(t testingT, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatalf("tar: %v", err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatalf("tar: %v", err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	return buf.Bytes()
}

// composeTar is a compose template whose content differs by n.
func composeTar(t testingT, n int) []byte {
	return tarOf(t, map[string]string{"compose.yaml": fmt.Sprintf("services:\n  app:\n    image: app:%d\n", n)})
}

// putReq is the command the API builds for an archive it has inspected.
func putReq(t testingT, name string, archive []byte) *PutTemplateRequest {
	t.Helper()
	info, err := artifact.Inspect(archive)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	return &PutTemplateRequest{Name: name, Digest: info.Digest, Runtime: info.Runtime, Files: info.Files, Archive: archive}
}

func (h *harness) push(name string, archive []byte) *TemplatePut {
	h.t.Helper()
	return h.ok(PutTemplateType, putReq(h.t, name, archive)).Value.(*TemplatePut)
}

func versionDigests(tpl *Template) []string {
	var out []string
	for _, v := range tpl.Versions {
		out = append(out, v.Digest)
	}
	return out
}

func TestPutTemplate(t *testing.T) {
	h := newHarness(t)
	a1, a2 := composeTar(t, 1), composeTar(t, 2)
	d1, d2 := artifact.Digest(a1), artifact.Digest(a2)

	first := h.push("web", a1)
	if !first.New || first.Version.Digest != d1 || first.Version.Runtime != "compose" || first.Version.Files != 1 ||
		first.Version.Size != int64(len(a1)) || first.Version.CreateIndex != h.index {
		t.Fatalf("first push %+v", first)
	}
	before, index := stateHash(t, h.fsm), h.fsm.State().Index(tableTemplates)
	again := h.push("web", a1)
	if again.New || again.Version != first.Version || stateHash(t, h.fsm) != before || h.fsm.State().Index(tableTemplates) != index {
		t.Fatalf("identical push changed something: %+v", again)
	}
	h.push("web", a2)
	h.push("web", a1) // the older bytes become the latest again
	tpl := h.fsm.State().Template("web")
	if got := versionDigests(tpl); !slices.Equal(got, []string{d2, d1}) || tpl.Latest().Digest != d1 {
		t.Fatalf("versions %v", got)
	}
	h.push("copy", a2) // same bytes under another name share the blob
	if b := h.fsm.State().Blob(d2); b == nil || !bytes.Equal(b.Data, a2) || b.Runtime != "compose" {
		t.Fatalf("blob %v", b)
	}
	if n := len(all[TemplateBlob](h.fsm.State().txn, tableBlobs, "id")); n != 2 {
		t.Fatalf("%d blobs, want 2", n)
	}
}

func TestPutTemplateRefusesMismatches(t *testing.T) {
	archive := composeTar(t, 1)
	cases := map[string]func(r *PutTemplateRequest){
		"digest of other bytes": func(r *PutTemplateRequest) { r.Digest = artifact.Digest([]byte("x")) },
		"runtime unknown":       func(r *PutTemplateRequest) { r.Runtime = "exec" },
		"bad name":              func(r *PutTemplateRequest) { r.Name = "Web" },
		"no bytes":              func(r *PutTemplateRequest) { r.Archive, r.Digest = nil, artifact.Digest(nil) },
		"no files":              func(r *PutTemplateRequest) { r.Files = 0 },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			before := stateHash(t, h.fsm)
			req := putReq(t, "web", archive)
			edit(req)
			if res := h.apply(PutTemplateType, req); !errors.Is(res.Err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", res.Err)
			}
			if stateHash(t, h.fsm) != before {
				t.Fatal("a refused push changed the state")
			}
		})
	}
}

func templateBundle(id, ref string) BundleSpec {
	j := testJob("app", 100, 0)
	j.Launch = Launch{Kind: LaunchProductTemplate, Ref: ref}
	return testBundle(id, "p", j)
}

func TestDeleteTemplate(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	a1, a2 := composeTar(t, 1), composeTar(t, 2)
	h.push("web", a1)
	h.push("web", a2)
	h.push("copy", a1)
	if res := h.apply(DeleteTemplateType, &DeleteTemplateRequest{Name: "ghost"}); !errors.Is(res.Err, ErrNotFound) {
		t.Fatalf("missing: %v", res.Err)
	}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b1", "web@"+artifact.Digest(a1))})
	h.ok(DeleteBundleType, &DeleteBundleRequest{ID: "b1"})
	// A deleting bundle's workers may still need the archive.
	before := stateHash(t, h.fsm)
	if res := h.apply(DeleteTemplateType, &DeleteTemplateRequest{Name: "web"}); !errors.Is(res.Err, ErrInUse) {
		t.Fatalf("in use: %v", res.Err)
	}
	if stateHash(t, h.fsm) != before {
		t.Fatal("a refused delete changed the state")
	}
	h.ok(PurgeBundleType, &PurgeBundleRequest{ID: "b1"})
	h.ok(DeleteTemplateType, &DeleteTemplateRequest{Name: "web"})
	st := h.fsm.State()
	if st.Template("web") != nil || st.Blob(artifact.Digest(a2)) != nil || st.Blob(artifact.Digest(a1)) == nil {
		t.Fatal("delete must drop the name and the blobs only it kept")
	}
}

func TestTemplateVersionsArePruned(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 8000, 8))
	first := h.push("web", composeTar(t, 0)).Version.Digest
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("b1", "web")}) // pins version 0
	second := h.push("web", composeTar(t, 1)).Version.Digest
	for i := 2; i <= MaxTemplateVersions; i++ {
		h.push("web", composeTar(t, i))
	}
	got := versionDigests(h.fsm.State().Template("web"))
	if len(got) != MaxTemplateVersions || got[0] != first || slices.Contains(got, second) {
		t.Fatalf("versions %v: want version 0 (in use) kept and version 1 dropped", got)
	}
	if h.fsm.State().Blob(second) != nil {
		t.Fatal("a dropped version's blob is still kept")
	}
}

func TestTemplateSnapshotRoundTrip(t *testing.T) {
	h := compatFixture(t)
	h.push("web", composeTar(t, 1))
	h.push("web", composeTar(t, 2))
	h.push("mod", tarOf(t, map[string]string{"main.wasm": "\x00asm"}))
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: templateBundle("tb", "web")})
	into := compatFixture(t) // a restore must replace what is there
	into.push("other", composeTar(t, 9))
	restoreInto(t, h.fsm, into.fsm)
	if stateHash(t, into.fsm) != stateHash(t, h.fsm) {
		t.Fatal("templates did not survive a snapshot")
	}
	st := into.fsm.State()
	if st.Template("other") != nil || len(st.Template("web").Versions) != 2 || st.Blob(st.Template("mod").Latest().Digest) == nil {
		t.Fatal("restored templates differ")
	}
}

// TestTemplateEventsCarryTheLeadersTime: a push's and a delete's events
// are stamped with the time the command carries, not with the time of
// whatever command came before (a template command of an older leader
// carries none and keeps that); an older server decodes the new field.
func TestTemplateEventsCarryTheLeadersTime(t *testing.T) {
	h := newHarness(t)
	h.ok(RegisterNodeType, &RegisterNodeRequest{Node: testNode("n1", "p", "az1", "c1", 1000, 1), Now: 1_000}) // an earlier command's time
	eventTime := func(typ string) int64 {
		t.Helper()
		evs := h.fsm.State().Events(0, 0)
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == typ {
				return evs[i].Time
			}
		}
		t.Fatalf("no %s event", typ)
		return 0
	}
	old := putReq(t, "web", composeTar(t, 1))
	h.ok(PutTemplateType, old)
	if got := eventTime(api.EventTemplatePushed); got != 1_000 {
		t.Fatalf("an older leader's push: event time %d, want the time before, 1000", got)
	}
	req := putReq(t, "web", composeTar(t, 2))
	req.Now = 5_000
	h.ok(PutTemplateType, req)
	if got := eventTime(api.EventTemplatePushed); got != 5_000 {
		t.Fatalf("push: event time %d, want 5000", got)
	}
	h.ok(DeleteTemplateType, &DeleteTemplateRequest{Name: "web", Now: 9_000})
	if got := eventTime(api.EventTemplateDeleted); got != 9_000 {
		t.Fatalf("delete: event time %d, want 9000", got)
	}
	type before struct{ Name string } // DeleteTemplateRequest before Now
	b, err := Encode(DeleteTemplateType, &DeleteTemplateRequest{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if was, _ := Encode(DeleteTemplateType, &before{Name: "web"}); string(b) != string(was) {
		t.Fatal("a delete without Now is encoded differently from before the field")
	}
}
