package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// aclEnv is a leader with ACLs on and one token of every kind; secrets maps
// a kind (or "worker") to its secret.
func aclEnv(t *testing.T) (*env, map[string]string) {
	t.Helper()
	b := newTestBackend("s1")
	e := newEnv(t, b, func(c *Config) { c.ACLEnabled = true })
	b.setLeader(e.hs.URL)
	seedCluster(t, b)
	secrets := map[string]string{}
	for _, kind := range []string{fsm.ACLManagement, fsm.ACLWrite, fsm.ACLRead, fsm.ACLWorker} {
		secret := "secret-of-the-" + kind + "-token"
		tok := fsm.ACLToken{AccessorID: "acc-" + kind, SecretHash: HashSecret(secret), Kind: kind}
		if kind == fsm.ACLWorker {
			tok.NodeID = "n1"
		}
		b.mustApply(t, fsm.UpsertACLTokenType, fsm.UpsertACLTokenRequest{Token: tok})
		secrets[kind] = secret
	}
	return e, secrets
}

func TestACLStatusByKind(t *testing.T) {
	e, secrets := aclEnv(t)
	bundle := mustJSON(t, validSpec("b1"))
	node := mustJSON(t, api.NodeSpec{ID: "n1", Pool: "p1", TotalCapacity: 8, TotalCores: 8})
	other := mustJSON(t, api.NodeSpec{ID: "n2", Pool: "p1", TotalCapacity: 8, TotalCores: 8})
	cases := []struct {
		name, method, path string
		body               []byte
		want               map[string]int // token kind ("" = none, "bogus") → status
	}{
		{"health is public", "GET", "/v1/health", nil, map[string]int{"": 200}},
		{"list bundles", "GET", "/v1/bundles", nil, map[string]int{
			"": 401, "bogus": 401, fsm.ACLRead: 200, fsm.ACLWrite: 200, fsm.ACLManagement: 200, fsm.ACLWorker: 403}},
		{"create bundle", "POST", "/v1/bundles", bundle, map[string]int{
			"": 401, fsm.ACLRead: 403, fsm.ACLWorker: 403, fsm.ACLWrite: 201}},
		{"snapshot", "GET", "/v1/operator/snapshot", nil, map[string]int{
			fsm.ACLWrite: 403, fsm.ACLManagement: 200}},
		{"tokens", "GET", "/v1/acl/tokens", nil, map[string]int{
			"": 401, fsm.ACLWrite: 403, fsm.ACLManagement: 200}},
		{"self", "GET", "/v1/acl/token/self", nil, map[string]int{
			"": 401, fsm.ACLWorker: 200, fsm.ACLRead: 200}},
		{"worker registers its own node", "PUT", "/v1/nodes/n1", node, map[string]int{
			fsm.ACLWorker: 200, fsm.ACLRead: 403}},
		{"worker reads its own assignments", "GET", "/v1/nodes/n1/assignments", nil, map[string]int{
			fsm.ACLWorker: 200}},
		{"worker cannot register another node", "PUT", "/v1/nodes/n2", other, map[string]int{
			fsm.ACLWorker: 403, fsm.ACLWrite: 200}},
		{"worker cannot read another node's assignments", "GET", "/v1/nodes/n2/assignments", nil, map[string]int{
			fsm.ACLWorker: 403}},
		{"worker cannot report for another node", "PUT", "/v1/nodes/n2/assignments/x/status",
			mustJSON(t, api.AssignmentStatus{State: "running"}), map[string]int{fsm.ACLWorker: 403}},
		{"worker cannot drain its own node", "POST", "/v1/nodes/n1/drain", nil, map[string]int{
			fsm.ACLWorker: 403}},
		{"read caps", "GET", "/v1/caps", nil, map[string]int{
			"": 401, fsm.ACLRead: 200, fsm.ACLWorker: 403}},
		{"set caps needs write", "PUT", "/v1/caps", []byte(`{"maxCores":64}`), map[string]int{
			"": 401, fsm.ACLRead: 403, fsm.ACLWorker: 403, fsm.ACLWrite: 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for kind, want := range tc.want {
				var hdr []string
				switch kind {
				case "":
				case "bogus":
					hdr = []string{api.HeaderToken, "no-such-secret-at-all"}
				default:
					hdr = []string{api.HeaderToken, secrets[kind]}
				}
				before := stateHash(t, e.b.State())
				resp, raw := e.do(tc.method, tc.path, tc.body, hdr...)
				if resp.StatusCode != want {
					t.Fatalf("%s token: status %d, want %d: %s", orDefault(kind, "no"), resp.StatusCode, want, raw)
				}
				if want == 401 || want == 403 {
					eb := errorBody(t, raw)
					if code := map[int]string{401: api.CodeUnauthorized, 403: api.CodeForbidden}[want]; eb.Code != code {
						t.Fatalf("code %q, want %q", eb.Code, code)
					}
					if after := stateHash(t, e.b.State()); after != before {
						t.Fatal("a denied request changed the state")
					}
				}
			}
		})
	}
}

// TestACLEveryRouteDenied proves deny by default: with ACLs on, every route
// but the public ones answers 401 without a token. A route registered
// without s.handle (so without authorize) fails here.
func TestACLEveryRouteDenied(t *testing.T) {
	e, _ := aclEnv(t)
	for _, r := range e.s.echo.Routes() {
		rule, ok := e.s.aclRules[r.Method+" "+r.Path]
		if ok && rule.need == accessPublic {
			continue
		}
		path := echoParam.ReplaceAllString(r.Path, "x")
		path = strings.ReplaceAll(path, "*", "x")
		resp, raw := e.do(r.Method, path, []byte("{}"))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d, want 401: %s", r.Method, r.Path, resp.StatusCode, raw)
		}
	}
}

func TestACLTokenLifecycle(t *testing.T) {
	e, secrets := aclEnv(t)
	mgmt := []string{api.HeaderToken, secrets[fsm.ACLManagement]}
	resp, raw := e.do("POST", "/v1/acl/tokens", []byte(`{"kind":"read","description":"dash"}`), mgmt...)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	var created api.ACLTokenCreated
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatal(err)
	}
	if len(created.SecretID) < minSecretLen || created.Token.Kind != fsm.ACLRead {
		t.Fatalf("created %+v", created)
	}
	stored := e.b.State().ACLToken(created.Token.AccessorID)
	if stored == nil || stored.SecretHash != HashSecret(created.SecretID) || strings.Contains(string(mustJSON(t, stored)), created.SecretID) {
		t.Fatalf("the state must hold the secret's hash only: %+v", stored)
	}
	// The new secret works, through the bearer header too.
	if resp, raw := e.do("GET", "/v1/acl/token/self", nil, "Authorization", "Bearer "+created.SecretID); resp.StatusCode != 200 ||
		!strings.Contains(string(raw), created.Token.AccessorID) {
		t.Fatalf("self: %d %s", resp.StatusCode, raw)
	}
	// Listing never shows a secret or a hash.
	if _, raw := e.do("GET", "/v1/acl/tokens", nil, mgmt...); strings.Contains(string(raw), stored.SecretHash) || strings.Contains(string(raw), created.SecretID) {
		t.Fatalf("list leaks a secret: %s", raw)
	}
	if resp, raw := e.do("DELETE", "/v1/acl/tokens/"+created.Token.AccessorID, nil, mgmt...); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, raw)
	}
	if resp, _ := e.do("GET", "/v1/bundles", nil, api.HeaderToken, created.SecretID); resp.StatusCode != 401 {
		t.Fatalf("a deleted token still works: %d", resp.StatusCode)
	}
}

func TestACLCreateRejectsBadInput(t *testing.T) {
	e, secrets := aclEnv(t)
	mgmt := []string{api.HeaderToken, secrets[fsm.ACLManagement]}
	cases := map[string]string{
		"unknown kind":         `{"kind":"root"}`,
		"worker without node":  `{"kind":"worker"}`,
		"node on a read token": `{"kind":"read","nodeId":"n1"}`,
		// A node id no node can have: the token was created, bound to nothing.
		"worker of an impossible node": `{"kind":"worker","nodeId":"bad id with spaces"}`,
		"short secret":                 `{"kind":"read","secretId":"short"}`,
		"unknown field":                `{"kind":"read","admin":true}`,
		"secret already in use":        `{"kind":"read","secretId":"` + secrets[fsm.ACLWrite] + `"}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			before := stateHash(t, e.b.State())
			resp, raw := e.do("POST", "/v1/acl/tokens", []byte(body), mgmt...)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Fatalf("status %d, want 4xx: %s", resp.StatusCode, raw)
			}
			if eb := errorBody(t, raw); eb.Code == "" {
				t.Fatal("error without a code")
			}
			if stateHash(t, e.b.State()) != before {
				t.Fatal("a rejected create changed the state")
			}
		})
	}
}

func TestACLDisabledAllowsAll(t *testing.T) {
	e := leaderEnv(t)
	if resp, raw := e.do("GET", "/v1/bundles", nil); resp.StatusCode != 200 {
		t.Fatalf("without ACLs: %d %s", resp.StatusCode, raw)
	}
	if resp, _ := e.do("GET", "/v1/acl/token/self", nil); resp.StatusCode != 400 {
		t.Fatalf("self without ACLs: %d, want 400", resp.StatusCode)
	}
}

// TestACLUIIsPublic: a browser loading the UI sends no token; the pages
// are static and public, the API behind them is not.
func TestACLUIIsPublic(t *testing.T) {
	b := newTestBackend("s1")
	e := newEnv(t, b, func(c *Config) { c.ACLEnabled, c.UI = true, testUI })
	b.setLeader(e.hs.URL)
	if resp, raw := e.do("GET", "/ui/", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ui/ without a token: %d %s", resp.StatusCode, raw)
	}
	if resp, _ := e.do("GET", "/v1/nodes", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/nodes without a token: %d, want 401", resp.StatusCode)
	}
}

// Deleting the only management token locked every operator out until the
// next leader (on a real cluster `acl token delete` of the bootstrap token
// was accepted, and every later command was 401): it is refused, and a
// management token with a peer can go.
func TestACLLastManagementTokenStays(t *testing.T) {
	e, secrets := aclEnv(t)
	mgmt := []string{api.HeaderToken, secrets[fsm.ACLManagement]}
	before := stateHash(t, e.b.State())
	resp, raw := e.do("DELETE", "/v1/acl/tokens/acc-management", nil, mgmt...)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(raw), "last management token") {
		t.Fatalf("delete the last management token: %d %s, want 409", resp.StatusCode, raw)
	}
	if stateHash(t, e.b.State()) != before {
		t.Fatal("a refused delete changed the state")
	}
	resp, raw = e.do("POST", "/v1/acl/tokens", []byte(`{"kind":"management"}`), mgmt...)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	if resp, raw := e.do("DELETE", "/v1/acl/tokens/acc-management", nil, mgmt...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete a management token with a peer: %d %s", resp.StatusCode, raw)
	}
}
