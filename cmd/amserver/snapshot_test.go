package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/snapshot"
)

// writeSnapshot writes a small valid snapshot with the snapshot package.
func writeSnapshot(t *testing.T, path string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := snapshot.NewWriter(&buf, snapshot.Header{Index: 42, Term: 7, CreatedUnixNano: 1_700_000_000_000_000_000,
		Meta: map[string]string{"cluster": "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		kind    uint8
		name    string
		records []string
	}{{1, "nodes", []string{"n1", "n2", "n3"}}, {2, "bundles", []string{"b1"}}, {3, "empty", nil}} {
		if err := w.BeginSection(s.kind, s.name); err != nil {
			t.Fatal(err)
		}
		for _, r := range s.records {
			if err := w.Record([]byte(r)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotInspect(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.snap")
	data := writeSnapshot(t, path)
	// Offline: the address points nowhere and must not matter.
	r := runCLI(t, "http://127.0.0.1:1", "", "operator", "snapshot", "inspect", path)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, line := range []string{"Index 42", "Term 7", "Meta cluster prod", "Records 4", "Created 2023-11-14T22:13:20Z"} {
		if !hasLine(r.stdout, line) {
			t.Errorf("output lacks a line %q:\n%s", line, r.stdout)
		}
	}
	if got := cell(t, r.stdout, "NAME", "1"); got != "nodes" {
		t.Errorf("section 1 = %q", got)
	}
	if got := cell(t, r.stdout, "RECORDS", "3"); got != "0" {
		t.Errorf("empty section records = %q", got)
	}

	r = runCLI(t, "http://127.0.0.1:1", "", "operator", "snapshot", "inspect", path, "--json")
	var sum snapshotSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != exitOK {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if sum.Index != 42 || sum.Term != 7 || sum.Records != 4 || len(sum.Sections) != 3 || sum.Bytes != int64(len(data)) {
		t.Errorf("summary = %+v", sum)
	}

	corrupt := bytes.Clone(data)
	corrupt[len(corrupt)/2] ^= 0xff
	bad := writeFile(t, dir, "bad.snap", string(corrupt))
	for _, tt := range []struct{ file, want string }{
		{bad, "invalid snapshot file"},
		{writeFile(t, dir, "text.snap", "hello"), "invalid snapshot file"},
		{filepath.Join(dir, "missing.snap"), "cannot read snapshot file"},
	} {
		r := runCLI(t, "http://127.0.0.1:1", "", "operator", "snapshot", "inspect", tt.file)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d, %s", tt.file, r.code, r.stderr)
		}
	}
}

func TestSnapshotSaveRestore(t *testing.T) {
	dir := t.TempDir()
	data := writeSnapshot(t, filepath.Join(dir, "source.snap"))
	f := newFake(t)
	f.on("GET /v1/operator/snapshot", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(api.HeaderIndex, "42")
		_, _ = w.Write(data)
	})
	f.on("PUT /v1/operator/snapshot", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	saved := filepath.Join(dir, "saved.snap")
	r := runCLI(t, f.srv.URL, "", "operator", "snapshot", "save", saved)
	if r.code != exitOK || !strings.Contains(r.stdout, "saved snapshot of index 42 (term 7, 4 records") {
		t.Fatalf("save: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got, err := os.ReadFile(saved); err != nil || !bytes.Equal(got, data) {
		t.Errorf("saved file differs from what the server sent (%v)", err)
	}

	r = runCLI(t, f.srv.URL, "", "operator", "snapshot", "restore", saved)
	if r.code != exitOK || !strings.Contains(r.stdout, "restored snapshot of index 42") {
		t.Fatalf("restore: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := f.last("PUT", "/v1/operator/snapshot").body; !bytes.Equal(got, data) {
		t.Errorf("restore sent %d bytes, want the file's %d", len(got), len(data))
	}

	// A bad file is refused locally and never sent.
	before := len(f.seen())
	bad := writeFile(t, dir, "bad.snap", "not a snapshot")
	if r := runCLI(t, f.srv.URL, "", "operator", "snapshot", "restore", bad); r.code != exitUsage || len(f.seen()) != before {
		t.Errorf("restore of a bad file: exit %d, %d requests: %s", r.code, len(f.seen())-before, r.stderr)
	}
}

// TestSnapshotSaveToDirectory: a directory as FILE is refused before
// anything is downloaded, saying so.
func TestSnapshotSaveToDirectory(t *testing.T) {
	dir := t.TempDir()
	f := newFake(t)
	f.on("GET /v1/operator/snapshot", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(writeSnapshot(t, filepath.Join(dir, "source.snap")))
	})
	r := runCLI(t, f.srv.URL, "", "operator", "snapshot", "save", dir)
	if r.code != exitUsage || !strings.Contains(r.stderr, "is a directory") || len(f.seen()) != 0 {
		t.Fatalf("save into a directory: exit %d, %d requests: %s", r.code, len(f.seen()), r.stderr)
	}
}

// TestSnapshotSaveTruncated: a truncated download fails (exit 1) and
// leaves neither the target nor a temporary file behind.
func TestSnapshotSaveTruncated(t *testing.T) {
	dir := t.TempDir()
	data := writeSnapshot(t, filepath.Join(dir, "source.snap"))
	f := newFake(t)
	f.on("GET /v1/operator/snapshot", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data[:len(data)-5]) })
	out := filepath.Join(dir, "out", "saved.snap")
	if err := os.Mkdir(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, f.srv.URL, "", "operator", "snapshot", "save", out)
	if r.code != exitFailure || !strings.Contains(r.stderr, "the server sent an invalid snapshot") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("left files behind: %v", entries)
	}
}

// hasLine reports a line of out whose words are those of want, whatever
// the padding between them.
func hasLine(out, want string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == want {
			return true
		}
	}
	return false
}
