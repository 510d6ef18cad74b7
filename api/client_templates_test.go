package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestPutTemplateSendsTheBytesAndRetries(t *testing.T) {
	archive := []byte("\x1f\x8b pretend this is a tar.gz")
	var bodies [][]byte
	check := func(next func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			bodies = append(bodies, b)
			if r.Method != http.MethodPut || r.URL.Path != "/v1/templates/live" || r.Header.Get("Content-Type") != "application/octet-stream" {
				t.Errorf("%s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			}
			next(w, r)
		}
	}
	answer := `{"name":"live","digest":"sha256:aa","runtime":"compose","files":3,"size":30,"createIndex":9}`
	c, _ := serve(t, check(noLeader), check(jsonAnswer(201, answer)))
	got, err := c.PutTemplate(context.Background(), "live", bytes.NewReader(archive))
	if err != nil || got.Digest != "sha256:aa" || got.Runtime != "compose" || got.Files != 3 || got.CreateIndex != 9 {
		t.Fatalf("put = %+v, %v", got, err)
	}
	if len(bodies) != 2 || !bytes.Equal(bodies[0], archive) || !bytes.Equal(bodies[1], archive) {
		t.Fatalf("bodies %q: the retry must resend the archive", bodies)
	}
	c, s := serve(t)
	_, err = c.PutTemplate(context.Background(), "live", strings.NewReader(strings.Repeat("x", MaxTemplateArchive+1)))
	if !IsCode(err, CodeBodyTooLarge) || s.requests.Load() != 0 {
		t.Fatalf("oversized archive: %v after %d requests", err, s.requests.Load())
	}
}

func TestTemplateReads(t *testing.T) {
	list := `[{"name":"a","digest":"sha256:1","runtime":"wasm","files":1,"size":5,"createIndex":3}]`
	one := `{"name":"a","digest":"sha256:1","runtime":"wasm","files":1,"size":5,"createIndex":3,` +
		`"versions":[{"digest":"sha256:1","runtime":"wasm","files":1,"size":5,"createIndex":3}]}`
	archive := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/templates/a/archive" || r.URL.Query().Get("digest") != "sha256:1" {
			t.Errorf("archive request %s", r.URL)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write([]byte("bytes"))
	}
	gone := jsonAnswer(409, `{"error":{"code":"inUse","message":"in use","errors":[],"warnings":[]}}`)
	c, _ := serve(t, jsonAnswer(200, list, HeaderIndex, "3"), jsonAnswer(200, one), archive, gone, jsonAnswer(204, ""))
	ctx := context.Background()
	ts, meta, err := c.Templates(ctx, nil)
	if err != nil || len(ts) != 1 || ts[0].Runtime != "wasm" || meta.Index != 3 {
		t.Fatalf("templates = %+v %+v, %v", ts, meta, err)
	}
	tpl, _, err := c.Template(ctx, "a", nil)
	if err != nil || len(tpl.Versions) != 1 {
		t.Fatalf("template = %+v, %v", tpl, err)
	}
	rc, err := c.TemplateArchive(ctx, "a", "sha256:1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "bytes" {
		t.Fatalf("archive %q", b)
	}
	if err := c.DeleteTemplate(ctx, "a"); !IsCode(err, CodeInUse) {
		t.Fatalf("delete in use: %v", err)
	}
	if err := c.DeleteTemplate(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchUnion: the older {driver, command, env} shape reads as a
// legacy launch; unknown fields are refused; a mixed launch is kept mixed
// (for validation to refuse); the union's forms round-trip.
func TestLaunchUnion(t *testing.T) {
	var old Launch
	if err := json.Unmarshal([]byte(`{"driver":"exec","command":["/bin/x"],"env":{"A":"1"}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Kind != LaunchLegacy || old.Job == nil || old.Job.Driver != DriverExec || old.Job.Command[0] != "/bin/x" ||
		old.Job.Env["A"] != "1" || old.Driver != "" || old.Command != nil || old.Env != nil {
		t.Fatalf("older shape read as %+v", old)
	}
	if out, _ := json.Marshal(old); string(out) != `{"kind":"legacy","job":{"driver":"exec","command":["/bin/x"],"env":{"A":"1"}}}` {
		t.Fatalf("reads back as %s", out)
	}
	for _, bad := range []string{`{"kind":"legacy","jobs":{}}`, `{"kind":"legacy","job":{"driver":"exec","cmd":[]}}`, `{"image":"x"}`} {
		var l Launch
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	// An unknown field names the union's real shape (an operator's guess
	// "runtime" otherwise leaves them reading the source).
	for _, guess := range []string{`{"runtime":"docker","image":"nginx"}`, `{"driver":"docker","image":"nginx"}`,
		`{"kind":"legacy","job":{"driver":"exec","cmd":[]}}`} {
		var l Launch
		err := json.Unmarshal([]byte(guess), &l)
		if err == nil || !strings.Contains(err.Error(), `unknown field`) ||
			!strings.Contains(err.Error(), `{"kind": "legacy", "job": {"driver": "exec"`) ||
			!strings.Contains(err.Error(), `"kind": "productTemplate", "ref"`) || !strings.Contains(err.Error(), `"oneOf"`) {
			t.Errorf("%s: %v, want the unknown field and the launch's shape", guess, err)
		}
	}
	var mixed Launch
	if err := json.Unmarshal([]byte(`{"kind":"productTemplate","ref":"web","driver":"exec"}`), &mixed); err != nil ||
		mixed.Kind != LaunchProductTemplate || mixed.Driver != DriverExec || mixed.Job != nil {
		t.Fatalf("mixed read as %+v, %v", mixed, err)
	}
	tpl := `{"kind":"productTemplate","ref":"web@sha256:00","parameters":{"P":"1"},"tags":{"t":"v"},` +
		`"startDateTime":"2030-01-01T00:00:00Z","stopDateTime":"2030-01-02T00:00:00Z"}`
	var l Launch
	if err := json.Unmarshal([]byte(tpl), &l); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(l); string(out) != tpl {
		t.Fatalf("template launch round trip: %s", out)
	}
}
