package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

// runDeclared runs a command line on the real root with one more command,
// built by build, the way run runs the real tree.
func runDeclared(t *testing.T, build func(*app) *cobra.Command, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdio: stdio{in: strings.NewReader(""), out: &out, err: &errb, getenv: func(string) string { return "" }}}
	root := newRootCmd(a)
	cmd := build(a)
	markArgErrors(cmd)
	root.AddCommand(cmd)
	code := a.execute(context.Background(), root, args)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// widgetGet declares a get: a node shown as a two-row table.
func widgetGet(a *app) *cobra.Command {
	return clientCmd[*api.Node]{
		Use:  "widget ID",
		Args: cobra.ExactArgs(1),
		Kind: "widget",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.Node, error) {
			n, _, err := c.Node(ctx, args[0], a.query())
			return n, err
		},
		Text: func(w io.Writer, n *api.Node) error {
			t := newTable(w)
			t.row("ID", n.ID)
			t.row("Pool", n.Pool)
			return t.flush()
		},
	}.build(a)
}

// widgetList declares a list of nodes.
func widgetList(a *app) *cobra.Command {
	return listCmd[api.NodeSummary]{
		Kind: "widgets",
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.NodeSummary, error] {
			return c.ListNodes(ctx, api.NodeFilter{}, o, q)
		},
		Paged: true, Variable: "node",
		Columns: []string{"ID", "POOL"},
		Row:     func(n api.NodeSummary, _ time.Time) []string { return []string{n.ID, n.Pool} },
	}.build(a)
}

// widgetDelete declares an action whose answer has no body.
func widgetDelete(a *app) *cobra.Command {
	return removeCmd(a, "unwidget NAME", "", "widget", "widget %q gone", (*api.Client).DeletePool)
}

// widgetCheck declares a command with everything else: a subject from
// Prepare, warnings, and a verdict on a printed answer.
func widgetCheck(a *app) *cobra.Command {
	return clientCmd[*api.ValidateResponse]{
		Use:  "check ID",
		Args: cobra.ExactArgs(1),
		Prepare: func(args []string) (string, error) {
			if args[0] == "reserved" {
				return "", usagef("widget id %q is reserved", args[0])
			}
			return strings.ToUpper(args[0]), nil
		},
		Kind: "widget",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.ValidateResponse, error) {
			return c.ValidateBundle(ctx, api.BundleSpec{ID: args[0]})
		},
		Warnings: func(v *api.ValidateResponse) []api.Finding { return v.Warnings },
		Sentence: func(id string, v *api.ValidateResponse) string { return fmt.Sprintf("widget %s checked", id) },
		Verdict:  validationVerdict,
	}.build(a)
}

func widgetFake(t *testing.T) *fakeAPI {
	f := newFake(t)
	f.reply("GET /v1/nodes", http.StatusOK, nil) // null: no nodes
	f.reply("GET /v1/nodes/w-1", http.StatusOK, sampleNode())
	f.fail("GET /v1/nodes/w-9", http.StatusNotFound, api.CodeNotFound, "node w-9: not found")
	f.fail("GET /v1/nodes/w-cas", http.StatusConflict, api.CodeCASMismatch, "modify index mismatch")
	f.fail("GET /v1/nodes/w-bad", http.StatusUnprocessableEntity, api.CodeValidationFailed, "invalid",
		api.Finding{Code: "noCapacity", Message: "capacity must be positive"})
	f.fail("GET /v1/nodes/w-500", http.StatusInternalServerError, api.CodeInternal, "boom")
	f.on("DELETE /v1/pools/p", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.fail("DELETE /v1/pools/busy", http.StatusConflict, api.CodeInUse, "in use: 2 nodes")
	f.reply("POST /v1/bundles/validate", http.StatusOK, api.ValidateResponse{Valid: false,
		Errors:   []api.Finding{{Code: "e", Message: "broken"}},
		Warnings: []api.Finding{{Code: "w", Message: "odd"}}})
	return f
}

// TestClientCmd checks what the builder owns for every declared command:
// the text or JSON form, the subject and exit code of errors, Prepare
// failing before any request, warnings and verdicts.
func TestClientCmd(t *testing.T) {
	f := widgetFake(t)
	tests := []struct {
		name      string
		build     func(*app) *cobra.Command
		args      []string
		code      int
		stdout    string // exact
		stderr    []string
		noRequest bool
	}{
		{"table", widgetGet, []string{"widget", "w-1"}, exitOK, "ID    w-1\nPool  live\n", nil, false},
		{"json", widgetGet, []string{"widget", "w-1", "--json"}, exitOK, mustIndent(t, sampleNode()), nil, false},
		{"not found", widgetGet, []string{"widget", "w-9"}, exitNotFound, "", []string{`error: widget "w-9" not found`}, false},
		{"cas mismatch", widgetGet, []string{"widget", "w-cas"}, exitConflict, "",
			[]string{`error: widget "w-cas" changed since it was read (modify index mismatch)`}, false},
		{"invalid", widgetGet, []string{"widget", "w-bad"}, exitInvalid, "",
			[]string{`error: widget "w-bad" failed validation with 1 error`, "noCapacity", "capacity must be positive"}, false},
		{"server error", widgetGet, []string{"widget", "w-500"}, exitFailure, "", []string{"error: server error (500 internal): boom"}, false},
		{"missing arg", widgetGet, []string{"widget"}, exitUsage, "", []string{"accepts 1 arg(s)", "amserver widget --help"}, true},
		{"list table", widgetList, []string{"ls"}, exitOK, "ID  POOL\n", nil, false},
		{"list json empty", widgetList, []string{"list", "--json"}, exitOK, "[]\n", nil, false},
		{"action", widgetDelete, []string{"unwidget", "p"}, exitOK, "widget \"p\" gone\n", nil, false},
		{"action json", widgetDelete, []string{"unwidget", "p", "--json"}, exitOK,
			mustIndent(t, doneJSON{Kind: "widget", ID: "p", Result: "removed"}), nil, false},
		{"action in use", widgetDelete, []string{"unwidget", "busy"}, exitConflict, "", []string{`error: widget "busy" is in use (2 nodes)`}, false},
		{"prepare fails first", widgetCheck, []string{"check", "reserved"}, exitUsage, "", []string{`error: widget id "reserved" is reserved`}, true},
		{"verdict after the answer", widgetCheck, []string{"check", "w-1"}, exitInvalid, "widget W-1 checked\n",
			[]string{"1 warning:", "odd", `error: bundle "W-1" is invalid: 1 error`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.seen())
			r := runDeclared(t, tt.build, append(tt.args, "--address", f.srv.URL)...)
			if r.code != tt.code || r.stdout != tt.stdout {
				t.Errorf("exit %d, want %d; stdout %q, want %q; stderr %q", r.code, tt.code, r.stdout, tt.stdout, r.stderr)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if len(tt.stderr) == 0 && r.stderr != "" {
				t.Errorf("stderr %q, want none", r.stderr)
			}
			if sent := len(f.seen()) > before; sent == tt.noRequest {
				t.Errorf("request sent: %v, want %v", sent, !tt.noRequest)
			}
		})
	}
}

// TestClientCmdKeepsNamedErrors: an error Call named itself, or that reads
// as a sentence, is not renamed after the declared subject.
func TestClientCmdKeepsNamedErrors(t *testing.T) {
	f := newFake(t)
	for _, tt := range []struct {
		err  error
		want string
	}{
		{about(&api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound}, "pool", "p"), `error: pool "p" not found`},
		{sentence(errors.New("down"), "node %q is down, not ready", "w-1"), `error: node "w-1" is down, not ready`},
		{errors.New("plain"), `error: gadget: plain`},
	} {
		build := func(a *app) *cobra.Command {
			return clientCmd[noBody]{Use: "gadget", Kind: "gadget",
				Call:     func(context.Context, *api.Client, []string) (noBody, error) { return noBody{}, tt.err },
				Sentence: func(string, noBody) string { return "unreachable" },
			}.build(a)
		}
		r := runDeclared(t, build, "gadget", "--address", f.srv.URL)
		if r.code != exitCode(tt.err) || r.stderr != tt.want+"\n" {
			t.Errorf("exit %d, stderr %q; want exit %d, %q", r.code, r.stderr, exitCode(tt.err), tt.want)
		}
	}
}

// TestClientCmdMalformed: a declaration without one human form is caught
// when the tree is built.
func TestClientCmdMalformed(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a declaration with neither Text nor Sentence built")
		}
	}()
	clientCmd[noBody]{Use: "broken", Call: func(context.Context, *api.Client, []string) (noBody, error) {
		return noBody{}, nil
	}}.build(&app{})
}

func mustIndent(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := printJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
