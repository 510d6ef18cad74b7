package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// jsonCase is one command run with --json; ndjson commands print a JSON
// object per line instead of one document.
type jsonCase struct {
	args   []string
	ndjson bool
}

// notJSON are the commands --json does not apply to: long-running
// processes, scripts and help, and logs and service logs, which print the
// workload's own text (TestLogsCommand, TestServiceLogsCommand).
var notJSON = []string{"agent", "dev", "completion", "help", "logs", "service logs"}

// jsonElsewhere are commands whose --json output another test checks (the
// dev cluster runs without ACLs): TestACLJSON.
var jsonElsewhere = []string{"acl token create", "acl token delete", "acl token list", "acl token read", "acl token self",
	"keyring install", "keyring use", "keyring remove"}

// TestJSONEveryCommand runs every client command with --json against an
// in-process dev cluster, in an order that makes each one meaningful, and
// checks that stdout is exactly one JSON document (or NDJSON). A command
// added without a case here fails the test.
func TestJSONEveryCommand(t *testing.T) {
	addr := startCluster(t)
	// A node without a worker: one whose worker is alive cannot be
	// deregistered (it would register again at once).
	c, err := api.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterNode(t.Context(), api.NodeSpec{ID: "spare-1", Pool: "default", TotalCapacity: 1}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	bundle := writeFile(t, dir, "b.yaml", "id: j-1\npool: default\njobs: [{name: enc, requirements: {capacity: 1}}]\n")
	retag := writeFile(t, dir, "b2.yaml", "id: j-1\npool: default\ntags: {team: audio}\njobs: [{name: enc, requirements: {capacity: 1}}]\n")
	svc := writeFile(t, dir, "svc.yaml", "id: web\npool: default\nkind: service\ncount: 2\njobs: [{name: srv, requirements: {capacity: 0.1}}]\n")
	pool := writeFile(t, dir, "p.json", `{"name": "extra"}`)
	service := writeFile(t, dir, "s.yaml", "id: probe\npools: [extra]\nlaunch: {driver: none}\n")
	snap := filepath.Join(dir, "state.snap")
	tpl := templateDir(t)

	cases := []jsonCase{
		{args: []string{"status"}},
		{args: []string{"members"}},
		{args: []string{"node", "list"}},
		{args: []string{"node", "status", "worker-1"}},
		{args: []string{"pool", "apply", pool}},
		{args: []string{"pool", "list"}},
		{args: []string{"pool", "status"}},
		{args: []string{"pool", "status", "extra"}},
		{args: []string{"caps", "set", "--max-cores", "100000", "--group", "rack-7=0:0"}},
		{args: []string{"caps", "get"}},
		{args: []string{"service", "apply", service}},
		{args: []string{"service", "list"}},
		{args: []string{"template", "push", tpl, "--name", "web"}},
		{args: []string{"template", "list"}},
		{args: []string{"template", "show", "web"}},
		{args: []string{"template", "rm", "web"}},
		{args: []string{"bundle", "validate", bundle}},
		{args: []string{"bundle", "plan", bundle}},
		{args: []string{"bundle", "submit", bundle, "--wait"}},
		{args: []string{"bundle", "list"}},
		{args: []string{"bundle", "status", "j-1"}},
		{args: []string{"bundle", "replace", retag}},
		{args: []string{"bundle", "submit", svc}},
		{args: []string{"bundle", "scale", "web", "3"}},
		{args: []string{"node", "cordon", "worker-2"}},
		{args: []string{"node", "uncordon", "worker-2"}},
		{args: []string{"node", "drain", "worker-2"}},
		{args: []string{"operator", "raft", "list-peers"}},
		{args: []string{"operator", "snapshot", "save", snap}},
		{args: []string{"operator", "snapshot", "inspect", snap}},
		{args: []string{"operator", "snapshot", "restore", snap}},
		{args: []string{"events", "--timeout", "500ms"}, ndjson: true},
		{args: []string{"keyring", "list"}},
		{args: []string{"keygen"}},
		{args: []string{"operator", "data-dir", "check", "--data-dir", t.TempDir()}},
		{args: []string{"operator", "data-dir", "migrate-to-wal", "--data-dir", boltDataDir(t)}},
		{args: []string{"tls", "ca", "create", "--dir", dir}},
		{args: []string{"tls", "cert", "create", "--client", "--dir", dir,
			"--ca", filepath.Join(dir, "ca.pem"), "--ca-key", filepath.Join(dir, "ca-key.pem")}},
		{args: []string{"bundle", "delete", "j-1"}},
		{args: []string{"service", "delete", "probe"}},
		{args: []string{"pool", "delete", "extra"}},
		{args: []string{"node", "deregister", "spare-1", "--force"}},
		// A one-server cluster can neither hand leadership over nor lose
		// its only peer: TestJSONNoBodyCommands covers these two.
		{args: []string{"operator", "raft", "transfer-leadership"}},
		{args: []string{"operator", "raft", "remove-peer", "s1"}},
	}
	expectFail := map[string]bool{"operator raft transfer-leadership": true, "operator raft remove-peer": true}
	covered := map[string]bool{}
	for _, tc := range cases {
		name := commandName(tc.args)
		covered[name] = true
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, addr, "", append(tc.args, "--json")...)
			if expectFail[name] {
				if r.code == exitOK || r.stdout != "" {
					t.Fatalf("exit %d, stdout %q: want a failure with nothing on stdout", r.code, r.stdout)
				}
				return
			}
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if err := checkJSON(r.stdout, tc.ndjson); err != nil {
				t.Fatalf("%v in:\n%s", err, r.stdout)
			}
		})
	}
	forEachLeaf(newRootCmd(&app{}), func(name string) {
		if !covered[name] && !slices.Contains(notJSON, strings.Fields(name)[0]) && !slices.Contains(notJSON, name) &&
			!slices.Contains(jsonElsewhere, name) {
			t.Errorf("command %q has no --json case", name)
		}
	})
}

// TestJSONNoBodyCommands: commands whose API answer has no body still print
// one JSON document with --json.
func TestJSONNoBodyCommands(t *testing.T) {
	f := newFake(t)
	noContent := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	f.on("DELETE /v1/operator/raft/peers/s3", noContent)
	f.on("POST /v1/operator/raft/transfer-leadership", noContent)
	f.on("DELETE /v1/pools/live", noContent)
	for _, tc := range []struct {
		args []string
		want doneJSON
	}{
		{[]string{"operator", "raft", "remove-peer", "s3"}, doneJSON{Kind: "raft peer", ID: "s3", Result: "removed"}},
		{[]string{"operator", "raft", "transfer-leadership", "s2"}, doneJSON{Kind: "raft peer", ID: "s2", Result: "leadershipTransferred"}},
		{[]string{"pool", "delete", "live"}, doneJSON{Kind: "pool", ID: "live", Result: "removed"}},
	} {
		r := runCLI(t, f.srv.URL, "", append(tc.args, "--json")...)
		var got doneJSON
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); r.code != exitOK || err != nil || got != tc.want {
			t.Errorf("%v: exit %d, %+v (%v), want %+v", tc.args, r.code, got, err, tc.want)
		}
	}
}

// commandName is the command path the arguments name ("node status").
func commandName(args []string) string {
	var words []string
	cmd := newRootCmd(&app{})
	for _, a := range args {
		next, _, err := cmd.Find([]string{a})
		if err != nil || next == cmd {
			break
		}
		words, cmd = append(words, next.Name()), next
	}
	return strings.Join(words, " ")
}

// forEachLeaf calls fn with the path (without the root) of every runnable
// command that has no subcommands.
func forEachLeaf(c *cobra.Command, fn func(string)) {
	for _, sub := range c.Commands() {
		if len(sub.Commands()) == 0 {
			fn(strings.TrimPrefix(sub.CommandPath(), "amserver "))
			continue
		}
		forEachLeaf(sub, fn)
	}
}

// checkJSON: out is one JSON document, or with ndjson, one per line.
func checkJSON(out string, ndjson bool) error {
	if !ndjson {
		dec := json.NewDecoder(strings.NewReader(out))
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return errors.New("more than one JSON document")
		}
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Index == 0 || ev.Type == "" {
			return errors.New("line is not an event: " + sc.Text())
		}
		n++
	}
	if n == 0 {
		return errors.New("no events")
	}
	return nil
}

// startCluster starts a server with two workers shaped like the dev
// cluster's (worker-1 and worker-2 in pool default) and returns its URL
// once both are ready.
func startCluster(t *testing.T) string {
	t.Helper()
	tc := testcluster.New(t, 1, testcluster.TCP())
	tc.StartWorkers(2, nil)
	s := tc.Servers()[0]
	c := tc.Client(s)
	poll.Eventually(t, 45*time.Second, "2 ready nodes", func() error {
		nodes, _, err := c.Nodes(t.Context(), api.NodeFilter{Status: api.NodeReady}, nil)
		if err != nil {
			return err
		}
		return poll.Check(len(nodes) == 2, "%d ready nodes", len(nodes))
	})
	return s.HTTPURL()
}

// TestSubmitWaitInProcess: against a real server, --wait prints the state
// changes up to placed and the replicas, or up to unplaceable and the
// explanation (exit 1).
func TestSubmitWaitInProcess(t *testing.T) {
	addr := startCluster(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		id       string
		capacity string
		code     int
		out      []string
	}{
		{"fits", "1", exitOK, []string{`bundle "fits" submitted`, `bundle "fits" is pending`, `bundle "fits" is placed`, "NODE"}},
		{"too-big", "1000", exitFailure, []string{`bundle "too-big" is unplaceable`, "Explain: 2 nodes evaluated",
			"Nearest miss: node worker-", "stopped at capacity"}},
	} {
		file := writeFile(t, dir, tc.id+".yaml", "id: "+tc.id+"\npool: default\njobs: [{name: enc, requirements: {capacity: "+tc.capacity+"}}]\n")
		r := runCLI(t, addr, "", "bundle", "submit", file, "--wait")
		if r.code != tc.code {
			t.Errorf("%s: exit %d, want %d: %s", tc.id, r.code, tc.code, r.stderr)
		}
		last := -1
		for _, s := range tc.out {
			i := strings.Index(r.stdout, s)
			if i < 0 || i < last {
				t.Errorf("%s: %q missing or out of order in:\n%s", tc.id, s, r.stdout)
			}
			last = i
		}
	}
}
