package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// exitCodeFake answers every request of the exit-code cases with an error.
func exitCodeFake(t *testing.T) *fakeAPI {
	t.Helper()
	f := newFake(t)
	f.fail("GET /v1/bundles/enc-1", http.StatusNotFound, api.CodeNotFound, "bundle enc-1: not found")
	f.fail("POST /v1/bundles", http.StatusConflict, api.CodeConflict, "bundle enc-1: already exists with a different spec")
	f.fail("PUT /v1/bundles/enc-1", http.StatusConflict, api.CodeCASMismatch, "bundle enc-1: modify index mismatch: expected 3, is 9")
	f.fail("DELETE /v1/pools/live", http.StatusConflict, api.CodeInUse, "in use: pool live has 3 nodes")
	f.fail("POST /v1/bundles/plan", http.StatusUnprocessableEntity, api.CodeValidationFailed, "validation failed: two jobs named encoder",
		api.Finding{Code: api.FindingDuplicateJobName, Message: "two jobs are named encoder", Job: "encoder"},
		api.Finding{Code: api.FindingUnknownPoolName, Message: "pool nope is not configured"})
	f.fail("GET /v1/nodes", http.StatusInternalServerError, api.CodeInternal, "boom")
	f.fail("GET /v1/pools", http.StatusServiceUnavailable, api.CodeNoLeader, "no leader")
	f.fail("POST /v1/nodes/w-9/cordon", http.StatusNotFound, api.CodeNotFound, "node w-9: not found")
	f.fail("PUT /v1/services/ptp", http.StatusBadRequest, api.CodeBadRequest, `unknown field "bogus"`)
	f.fail("PUT /v1/templates/web", http.StatusBadRequest, "invalidArchive", "not a tar archive: unexpected EOF")
	f.fail("POST /v1/acl/tokens", http.StatusUnprocessableEntity, api.CodeValidationFailed, `invalid: token kind "bogus": want management, write, read or worker`)
	f.reply("POST /v1/bundles/validate", http.StatusOK, api.ValidateResponse{Valid: false,
		Errors:   []api.Finding{{Code: api.FindingSelfReferenceInPlacement, Message: "encoder names itself", Job: "encoder"}},
		Warnings: []api.Finding{{Code: api.FindingUnsatisfiableGpu, Message: "no node has an A100", Job: "encoder"}}})
	return f
}

// exitCase is one command line, the exit code it must end with and what
// stderr must say.
type exitCase struct {
	name     string
	args     []string
	code     int
	stderr   []string
	noServer bool // the command must fail before any request
}

func exitCases(t *testing.T) []exitCase {
	t.Helper()
	dir := t.TempDir()
	good := writeFile(t, dir, "b.yaml", "id: enc-1\npool: live\njobs:\n  - name: encoder\n")
	typo := writeFile(t, dir, "typo.yaml", "id: enc-1\npool: live\njobs:\n  - name: encoder\n    requirements: {capacty: 2}\n")
	broken := writeFile(t, dir, "broken.json", `{"id": "enc-1", "pool": `)
	svc := writeFile(t, dir, "s.json", `{"id": "ptp", "pools": ["live"], "launch": {}}`)
	noID := writeFile(t, dir, "noid.yaml", "pool: live\njobs: [{name: a}]\n")
	junk := writeFile(t, dir, "junk.tar", "not a tar")
	return []exitCase{
		{"not found", []string{"bundle", "status", "enc-1"}, exitNotFound, []string{`error: bundle "enc-1" not found`}, false},
		{"node not found", []string{"node", "cordon", "w-9"}, exitNotFound, []string{`error: node "w-9" not found`}, false},
		{"exists", []string{"bundle", "submit", good}, exitConflict, []string{`error: bundle "enc-1": already exists with a different spec`}, false},
		{"cas mismatch", []string{"bundle", "replace", good, "--cas", "3"}, exitConflict,
			[]string{`error: bundle "enc-1" changed since it was read (modify index mismatch: expected 3, is 9)`}, false},
		{"in use", []string{"pool", "delete", "live"}, exitConflict, []string{`error: pool "live" is in use (pool live has 3 nodes)`}, false},
		{"validation", []string{"bundle", "plan", good}, exitInvalid, []string{`error: bundle "enc-1" failed validation with 2 errors`,
			"duplicateJobName", "encoder", "two jobs are named encoder", "unknownPoolName", "pool nope is not configured"}, false},
		{"validate invalid", []string{"bundle", "validate", good}, exitInvalid, []string{`error: bundle "enc-1" is invalid: 1 error`}, false},
		{"server error", []string{"node", "list"}, exitFailure, []string{"error: server error (500 internal): boom"}, false},
		{"no leader", []string{"pool", "list"}, exitFailure, []string{"error: the cluster has no leader right now"}, false},
		{"bad request", []string{"service", "apply", svc}, exitUsage, []string{`error: the server rejected the request for service "ptp": unknown field "bogus"`}, false},
		// A 4xx of its own code is the client's mistake, not a "server error".
		{"refused archive", []string{"template", "push", junk, "--name", "web"}, exitUsage,
			[]string{`error: the server rejected the request for template "web" (invalidArchive): not a tar archive`}, false},
		{"invalid without findings", []string{"acl", "token", "create", "--kind", "bogus"}, exitInvalid,
			[]string{`error: acl token is invalid: token kind "bogus"`}, false},
		{"missing arg", []string{"bundle", "status"}, exitUsage, []string{"accepts 1 arg(s), received 0", "amserver bundle status --help"}, true},
		{"extra arg", []string{"node", "list", "x"}, exitUsage, []string{`unknown command "x" for "amserver node list"`}, true},
		{"unknown flag", []string{"bundle", "list", "--pol", "x"}, exitUsage, []string{"unknown flag: --pol"}, true},
		{"bad flag value", []string{"bundle", "replace", good, "--cas", "-1"}, exitUsage, []string{`invalid argument "-1"`}, true},
		{"cas zero", []string{"bundle", "replace", good, "--cas", "0"}, exitUsage, []string{"--cas 0: a modify index is at least 1"}, true},
		{"unknown command", []string{"bundel", "list"}, exitUsage, []string{`unknown command "bundel" for "amserver"; did you mean "bundle"?`}, true},
		{"unknown subcommand", []string{"node", "cordn", "w-1"}, exitUsage, []string{`unknown command "cordn" for "amserver node"; did you mean "cordon"?`}, true},
		{"missing file", []string{"bundle", "submit", dir + "/nope.yaml"}, exitUsage, []string{`cannot read bundle file "` + dir + `/nope.yaml": no such file or directory`}, true},
		{"unknown field", []string{"bundle", "submit", typo}, exitUsage, []string{`invalid bundle file`, `unknown field "capacty"`}, true},
		{"broken json", []string{"bundle", "validate", broken}, exitUsage, []string{"invalid bundle file", "ends in the middle of a value"}, true},
		{"replace without id", []string{"bundle", "replace", noID}, exitUsage, []string{"has no id"}, true},
		{"negative timeout", []string{"bundle", "list", "--timeout", "-1s"}, exitUsage, []string{"--timeout must not be negative"}, true},
	}
}

// TestExitCodes maps server answers and local mistakes to exit codes and
// one clear sentence on stderr.
func TestExitCodes(t *testing.T) {
	f := exitCodeFake(t)
	for _, tt := range exitCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.seen())
			r := runCLI(t, f.srv.URL, "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, "error: ") {
				t.Errorf("stderr does not start with an error sentence:\n%s", r.stderr)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if n := len(f.seen()) - before; tt.noServer && n > 0 {
				t.Errorf("%d requests sent for a command that should fail first", n)
			}
		})
	}
}

func TestBadAddress(t *testing.T) {
	r := runEnv(t, map[string]string{envAddr: "ftp://x"}, "", "bundle", "list")
	if r.code != exitUsage || !strings.Contains(r.stderr, "want http(s)://host:port") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// TestUnreachable checks the sentence for a server that is not there.
func TestUnreachable(t *testing.T) {
	f := newFake(t)
	addr := f.srv.URL
	f.srv.Close()
	r := runCLI(t, addr, "", "node", "list")
	if r.code != exitFailure || !strings.Contains(r.stderr, "error: cannot reach the server at "+addr+": ") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

func TestDescribeAPIWithoutSubject(t *testing.T) {
	e := &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "nothing here"}
	if got := describeAPI("", "", e); got != "not found: nothing here" {
		t.Errorf("describeAPI = %q", got)
	}
	// `logs` names no subject; the server's message says what is missing.
	e2 := &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: `bundle "nosuch" not found`}
	if got := describeAPI("", "", e2); got != `bundle "nosuch" not found` {
		t.Errorf("describeAPI = %q", got)
	}
	if got := exitCode(about(e, "bundle", "x")); got != exitNotFound {
		t.Errorf("exitCode = %d", got)
	}
}

// TestTimeout: --timeout bounds a request to a server that never answers.
func TestTimeout(t *testing.T) {
	f := newFake(t)
	f.on("GET /v1/nodes", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	f.fail("POST /v1/bundles/plan", http.StatusNotImplemented, api.CodeNotImplemented, "not implemented")
	r := runCLI(t, f.srv.URL, "", "node", "list", "--timeout", "200ms")
	if r.code != exitFailure || r.stderr != "error: timed out after 200ms (see --timeout)\n" {
		t.Errorf("exit %d: %q", r.code, r.stderr)
	}
	file := writeFile(t, t.TempDir(), "b.yaml", "pool: live\njobs: [{name: a}]\n")
	r = runCLI(t, f.srv.URL, "", "bundle", "plan", file)
	if r.code != exitFailure || !strings.Contains(r.stderr, "does not implement that yet") {
		t.Errorf("exit %d: %q", r.code, r.stderr)
	}
}

// TestListenTaken: an agent whose listen address is taken says which
// address, not that a server is unreachable.
func TestListenTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	_, err = net.Listen("tcp", l.Addr().String())
	if err == nil {
		t.Fatal("second listen on one address succeeded")
	}
	got := (&app{}).describe(fmt.Errorf("worker: %w", err))
	if !strings.Contains(got, "cannot listen on "+l.Addr().String()) || strings.Contains(got, "cannot reach the server") {
		t.Errorf("describe = %q", got)
	}
}
