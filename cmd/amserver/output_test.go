package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

func TestFormatHelpers(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct{ got, want string }{
		{coreSet([]int{3, 0, 1, 2, 8, 10, 11, 11}), "0-3,8,10-11"},
		{coreSet(nil), "-"},
		{coreSet([]int{5}), "5"},
		{qty(2.5), "2.5"},
		{qty(0.1 + 0.2), "0.3"},
		{qty(16), "16"},
		{frac(2.5, 16, "cap"), "2.5/16 cap"},
		{frac(1.0/3, 1, ""), "0.333/1"},
		{ago(now.Add(-12*time.Second), now), "12s ago"},
		{ago(now.Add(-5*time.Minute), now), "5m ago"},
		{ago(now.Add(-30*time.Hour), now), "30h ago"},
		{ago(now.Add(-72*time.Hour), now), "3d ago"},
		{ago(now.Add(10*time.Minute), now), "in 10m"},
		{ago(time.Time{}, now), "-"},
		{kv(map[string]string{"b": "2", "a": "1"}), "a=1,b=2"},
		{clean("plain-name"), "plain-name"},
		{clean("evil\x1b[2Jname"), `"evil\x1b[2Jname"`},
		{clean("tab\there"), `"tab\there"`},
		{clean("héllo wörld"), "héllo wörld"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestHostileValues: a label holding a tab or an escape sequence cannot
// break the table or reach the terminal raw.
func TestHostileValues(t *testing.T) {
	f := newFake(t)
	n := sampleNode()
	n.Labels["az"] = "az1\tfake-column\x1b[31m"
	f.reply("GET /v1/nodes", http.StatusOK, []api.Node{n})
	r := runCLI(t, f.srv.URL, "", "node", "list")
	if r.code != exitOK || strings.ContainsAny(r.stdout, "\t\x1b") {
		t.Fatalf("exit %d, raw control characters in:\n%q", r.code, r.stdout)
	}
	if got := cell(t, r.stdout, "CLOUD", "w-1"); got != "aws" {
		t.Errorf("CLOUD = %q: columns shifted", got)
	}
}

func TestValidateValid(t *testing.T) {
	f := newFake(t)
	f.reply("POST /v1/bundles/validate", http.StatusOK, api.ValidateResponse{Valid: true, Errors: []api.Finding{},
		Warnings: []api.Finding{{Code: api.FindingUnsatisfiableCores, Message: "no node has 64 cores", Job: "encoder"}}})
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")
	r := runCLI(t, f.srv.URL, "", "bundle", "validate", file)
	if r.code != exitOK || !strings.Contains(r.stdout, `bundle "enc-1" is valid`) {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := cell(t, r.stdout, "CODE", "warning"); got != api.FindingUnsatisfiableCores {
		t.Errorf("warning code = %q\n%s", got, r.stdout)
	}
}

func TestSubmitJSON(t *testing.T) {
	f := newFake(t)
	b := sampleBundle()
	f.reply("POST /v1/bundles", http.StatusOK, api.CreateResponse{Bundle: b})
	file := writeFile(t, t.TempDir(), "b.yaml", "id: enc-1\npool: live\njobs: [{name: encoder}]\n")
	r := runCLI(t, f.srv.URL, "", "bundle", "submit", file, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var resp api.CreateResponse
	if err := decodeStrict("out.json", []byte(r.stdout), &resp); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if mustJSON(t, resp.Bundle) != mustJSON(t, b) {
		t.Errorf("bundle differs: %s", r.stdout)
	}
	// A submission without an id gets one chosen by the CLI.
	noID := writeFile(t, t.TempDir(), "n.yaml", "pool: live\njobs: [{name: encoder}]\n")
	if r := runCLI(t, f.srv.URL, "", "bundle", "submit", noID); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var sent api.BundleSpec
	if err := decodeStrict("body.json", f.last("POST", "/v1/bundles").body, &sent); err != nil || len(sent.ID) != api.IDLength {
		t.Errorf("sent id %q, %v", sent.ID, err)
	}
}

// TestCompletion: cobra's completion command is kept, and ids complete
// from the server.
func TestCompletion(t *testing.T) {
	f := newFake(t)
	serveAll(f)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "bundle", "status", ""}, "enc-1"},
		{[]string{"__complete", "node", "drain", ""}, "w-1"},
		{[]string{"completion", "bash"}, "complete -o default -F __start_amserver amserver"},
		{[]string{"completion", "zsh"}, "compdef"},
		{[]string{"completion", "fish"}, "complete -c amserver"},
		{[]string{"__complete", "events", "--type", ""}, "nodeStatus"},
	}
	for _, tt := range tests {
		// The address comes from the environment, as in a shell; a flag
		// after the word being completed would be completed instead.
		r := runEnv(t, map[string]string{envAddr: f.srv.URL}, "", tt.args...)
		if r.code != exitOK || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("%v: exit %d, stdout %.200q", tt.args, r.code, r.stdout)
		}
	}
	if _, ok := f.last("GET", "/v1/nodes").query["stale"]; !ok {
		t.Error("completion reads are not stale")
	}
}

// TestEffectivePriorityText: the bundle's own band unless a job lifted it.
func TestEffectivePriorityText(t *testing.T) {
	cases := []struct{ own, effective, want string }{
		{"", "", "silver"},
		{"gold", "gold", "gold"},
		{"", "silver", "silver"},
		{"bronze", "gold", "gold (own bronze)"},
		{"", "gold", "gold (own silver)"},
	}
	for _, tc := range cases {
		if got := effectivePriority(tc.own, tc.effective); got != tc.want {
			t.Errorf("effectivePriority(%q, %q) = %q, want %q", tc.own, tc.effective, got, tc.want)
		}
	}
}

func TestMemoryText(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{memoryUse(0, 0), "-"}, {memoryUse(512, 8192), "512/8192 MiB"}, {memoryUse(0, 8192), "0/8192 MiB"},
		{memoryRequest(0, 0), "-"}, {memoryRequest(512, 0), "512 MiB"}, {memoryRequest(512, 1024), "512 MiB (limit 1024)"},
		{memoryRequest(0, 1024), "0 MiB (limit 1024)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
