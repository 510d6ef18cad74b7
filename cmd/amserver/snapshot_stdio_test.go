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
)

// TestSnapshotStdio: "-" is standard output for save and standard input
// for restore and inspect, as FILE|- is elsewhere in the CLI. save - writes
// the snapshot alone to stdout (its summary goes to stderr, in either
// format) and never a file named "-"; a bad snapshot on stdin is refused
// and never sent.
func TestSnapshotStdio(t *testing.T) {
	dir := t.TempDir()
	data := writeSnapshot(t, filepath.Join(dir, "source.snap"))
	served := data // what the server sends to save
	f := newFake(t)
	f.on("GET /v1/operator/snapshot", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(api.HeaderIndex, "42")
		_, _ = w.Write(served)
	})
	f.on("PUT /v1/operator/snapshot", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	t.Chdir(dir) // a file named "-" would land here

	for _, tc := range []struct {
		name        string
		stdin       string
		served      []byte // instead of the snapshot
		args        []string
		code        int
		stdout      string // exact, when the snapshot itself
		stdoutHas   string
		stderrHas   string
		sent        bool // a PUT carried the snapshot
		summaryJSON bool // stderr holds the --json summary
	}{
		{name: "save", args: []string{"save", "-"}, stdout: string(data),
			stderrHas: "saved snapshot of index 42 (term 7, 4 records"},
		{name: "save truncated", served: data[:len(data)-5], args: []string{"save", "-"}, code: exitFailure,
			stderrHas: "nothing was written to standard output"},
		{name: "save json", args: []string{"save", "-", "--json"}, stdout: string(data), summaryJSON: true},
		{name: "restore", stdin: string(data), args: []string{"restore", "-"},
			stdoutHas: "restored snapshot of index 42 from standard input", sent: true},
		{name: "restore garbage", stdin: "not a snapshot", args: []string{"restore", "-"}, code: exitUsage,
			stderrHas: "invalid snapshot file (stdin)"},
		{name: "restore truncated", stdin: string(data[:len(data)-5]), args: []string{"restore", "-"}, code: exitUsage,
			stderrHas: "invalid snapshot file (stdin)"},
		{name: "inspect", stdin: string(data), args: []string{"inspect", "-"}, stdoutHas: "Records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served = data
			if tc.served != nil {
				served = tc.served
			}
			before := len(f.seen())
			r := runCLI(t, f.srv.URL, tc.stdin, append([]string{"operator", "snapshot"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderrHas) || !strings.Contains(r.stdout, tc.stdoutHas) {
				t.Fatalf("exit %d, want %d\nstdout %.200q\nstderr %q", r.code, tc.code, r.stdout, r.stderr)
			}
			if (tc.stdout != "" || tc.code != exitOK) && r.stdout != tc.stdout {
				t.Errorf("stdout is %d bytes, not the %d of the snapshot alone", len(r.stdout), len(tc.stdout))
			}
			if tc.summaryJSON {
				var sum snapshotSummary
				if err := json.Unmarshal([]byte(r.stderr), &sum); err != nil || sum.Index != 42 {
					t.Errorf("stderr summary %+v, %v: %s", sum, err, r.stderr)
				}
			}
			puts := 0
			for _, req := range f.seen()[before:] {
				if req.method == http.MethodPut {
					puts++
					if !bytes.Equal(req.body, data) {
						t.Errorf("restore sent %d bytes, want the snapshot's %d", len(req.body), len(data))
					}
				}
			}
			if (puts > 0) != tc.sent {
				t.Errorf("%d restores sent, want sent=%v", puts, tc.sent)
			}
			if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
				t.Errorf(`a file named "-" was written`)
			}
		})
	}
}
