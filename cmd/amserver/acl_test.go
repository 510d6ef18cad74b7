package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

func TestACLTokenCommands(t *testing.T) {
	f := newFake(t)
	tok := api.ACLToken{AccessorID: "acc1", Kind: api.ACLWorker, NodeID: "w-1", CreateTime: time.Now(), CreateIndex: 3, ModifyIndex: 3}
	f.reply("POST /v1/acl/tokens", http.StatusCreated, api.ACLTokenCreated{Token: tok, SecretID: "s3cr3t-s3cr3t-s3cr3t"})
	f.reply("GET /v1/acl/tokens", http.StatusOK, []api.ACLToken{tok})
	f.fail("GET /v1/acl/token/self", http.StatusForbidden, api.CodeForbidden, "a read token cannot call this")
	env := map[string]string{envAddr: f.srv.URL, envToken: "mgmt-secret"}

	r := runEnv(t, env, "", "acl", "token", "create", "--kind", "worker", "--node-id", "w-1")
	if r.code != exitOK || !strings.Contains(r.stdout, "s3cr3t-s3cr3t-s3cr3t") || !strings.Contains(r.stdout, "acc1") {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	req := f.last("POST", "/v1/acl/tokens")
	var body api.ACLTokenRequest
	if err := json.Unmarshal(req.body, &body); err != nil || body.Kind != "worker" || body.NodeID != "w-1" {
		t.Fatalf("create body %s: %v", req.body, err)
	}
	if req.token != "mgmt-secret" {
		t.Fatalf("the CLI sent token %q, want AMSERVER_TOKEN's", req.token)
	}
	if r := runEnv(t, env, "", "acl", "token", "list"); r.code != exitOK || cell(t, r.stdout, "NODE", "acc1") != "w-1" {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runEnv(t, env, "", "acl", "token", "self")
	if r.code == exitOK || !strings.Contains(r.stderr, "cannot call") {
		t.Fatalf("a 403 must fail with its message: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runEnv(t, env, "", "acl", "token", "create"); r.code != exitUsage {
		t.Fatalf("create without --kind: exit %d, want %d", r.code, exitUsage)
	}
}

func TestParseConfigToken(t *testing.T) {
	tests := []struct {
		spec, kind, node, secret string
		ok                       bool
	}{
		{"management:abc:def-0123456789abcdef", "management", "", "abc:def-0123456789abcdef", true},
		{"worker:w-1:secret-0123456789abcdef", "worker", "w-1", "secret-0123456789abcdef", true},
		// The servers refused these at start as "acl token 2: ...", naming no flag.
		{"read:short", "", "", "", false},
		{"worker:Bad Node:secret-0123456789abcdef", "", "", "", false},
		{"worker:secret", "", "", "", false},
		{"read", "", "", "", false},
		{"worker::secret", "", "", "", false},
	}
	for _, tt := range tests {
		got, err := parseConfigToken(tt.spec)
		if (err == nil) != tt.ok {
			t.Fatalf("%q: err %v, want ok=%v", tt.spec, err, tt.ok)
		}
		if err != nil {
			if strings.Contains(err.Error(), "secret") && strings.Contains(err.Error(), tt.spec) {
				t.Fatalf("%q: the error repeats the secret: %v", tt.spec, err)
			}
			continue
		}
		if got.Kind != tt.kind || got.NodeID != tt.node || got.Secret != tt.secret {
			t.Fatalf("%q: got %+v", tt.spec, got)
		}
	}
}

// TestAgentFlagsFromEnvironment: AMSERVER_<FLAG> fills what the command
// line left unset; the command line wins; list flags split on commas.
func TestAgentFlagsFromEnvironment(t *testing.T) {
	cmd := newAgentCmd()
	if err := cmd.Flags().Parse([]string{"--node-id", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"AMSERVER_NODE_ID":              "from-env",
		"AMSERVER_ACL_ENABLED":          "true",
		"AMSERVER_ACL_MANAGEMENT_TOKEN": "0123456789abcdef",
		"AMSERVER_JOIN":                 "10.0.0.1:7072, 10.0.0.2:7072",
	}
	if err := applyEnv(cmd, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	get := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	if get("node-id") != "from-flag" || get("acl-enabled") != "true" || get("acl-management-token") != "0123456789abcdef" {
		t.Fatalf("node-id %q acl-enabled %q", get("node-id"), get("acl-enabled"))
	}
	if got := get("join"); got != "[10.0.0.1:7072,10.0.0.2:7072]" {
		t.Fatalf("join = %s", got)
	}
	bad := map[string]string{"AMSERVER_BOOTSTRAP_EXPECT": "three"}
	if err := applyEnv(newAgentCmd(), func(k string) string { return bad[k] }); err == nil || !strings.Contains(err.Error(), "AMSERVER_BOOTSTRAP_EXPECT") {
		t.Fatalf("a bad value must name its variable: %v", err)
	}
}

// TestACLJSON: every acl command prints one JSON document with --json.
func TestACLJSON(t *testing.T) {
	f := newFake(t)
	tok := api.ACLToken{AccessorID: "acc1", Kind: api.ACLRead, CreateTime: time.Now(), CreateIndex: 3, ModifyIndex: 3}
	f.reply("POST /v1/acl/tokens", http.StatusCreated, api.ACLTokenCreated{Token: tok, SecretID: "s3cr3t-s3cr3t-s3cr3t"})
	f.reply("GET /v1/acl/tokens", http.StatusOK, []api.ACLToken{tok})
	f.reply("GET /v1/acl/tokens/acc1", http.StatusOK, tok)
	f.reply("GET /v1/acl/token/self", http.StatusOK, tok)
	f.on("DELETE /v1/acl/tokens/acc1", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, args := range [][]string{
		{"acl", "token", "create", "--kind", "read"}, {"acl", "token", "list"}, {"acl", "token", "read", "acc1"},
		{"acl", "token", "self"}, {"acl", "token", "delete", "acc1"},
	} {
		r := runCLI(t, f.srv.URL, "", append(args, "--json")...)
		if r.code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if err := checkJSON(r.stdout, false); err != nil {
			t.Fatalf("%v: %v in:\n%s", args, err, r.stdout)
		}
	}
}

// TestKeyringChangeJSON: keyring changes answer 204; with --json they still
// print one document naming the key and what was done.
func TestKeyringChangeJSON(t *testing.T) {
	f := newFake(t)
	f.on("POST /v1/operator/keyring", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	key := "T9L6mX1xk7n3+4fY0lC0xq0YQ2vL9o0hJgk7s3Q7WmE="
	for _, op := range []string{"install", "use", "remove"} {
		r := runCLI(t, f.srv.URL, "", "keyring", op, key, "--json")
		if r.code != exitOK {
			t.Fatalf("%s: exit %d: %s", op, r.code, r.stderr)
		}
		var out doneJSON
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Result != op || out.ID == "" {
			t.Fatalf("%s: %q (%v)", op, r.stdout, err)
		}
	}
}

// A short bootstrap management secret is refused naming its flag (the
// servers said "acl token 1: the secret must be at least 16 bytes").
func TestShortManagementSecretNamesTheFlag(t *testing.T) {
	f := aclFlags{enabled: true, management: "short"}
	if _, err := f.config(); err == nil || !strings.Contains(err.Error(), "--acl-management-token") {
		t.Fatalf("short management secret: %v, want an error naming --acl-management-token", err)
	}
}
