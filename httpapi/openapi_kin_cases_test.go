package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
)

// kinCases are the requests whose answers TestOpenAPIResponsesValidate
// validates: a success of every operation and the error answers each kind
// of route gives. They run in order against kinEnvs (a case may depend on
// one before it: the pool it deletes was put first).
func kinCases() []kinCase {
	return slicesConcat(kinClusterCases(), kinPoolCases(), kinNodeCases(), kinBundleCases(),
		kinTemplateCases(), kinOperatorCases(), kinACLCases(), kinLimitCases())
}

func slicesConcat(parts ...[]kinCase) []kinCase {
	var out []kinCase
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func get(path string, status int) kinCase { return kinCase{method: "GET", path: path, status: status} }

func with(tc kinCase, body string) kinCase { tc.body = body; return tc }

func kinClusterCases() []kinCase {
	return []kinCase{
		get("/v1/status/leader", 200), get("/v1/status/peers", 200), get("/v1/health", 200),
		get("/v1/members", 200), get("/v1/operator/digest", 200), get("/metrics", 200),
		{env: "noLeader", method: "GET", path: "/v1/status/leader", status: 503},
		get("/", 302), get("/ui", 302), get("/ui/", 200), get("/ui/app.js", 200), get("/ui/nope.js", 404),
		get("/v1/nope", 404),
		{method: "PATCH", path: "/v1/bundles/b1", body: "{}", status: 405},
		get("/v1/events?index=0", 200),
		get("/v1/events?index=x", 400),
		get("/v1/assignments/b1:0:enc@n1/logs?tail=10&stream=stdout", 200),
		get("/v1/assignments/b1:0:enc@n1/logs?tail=-1", 400),
		get("/v1/assignments/ghost/logs", 404),
	}
}

func kinPoolCases() []kinCase {
	return []kinCase{
		get("/v1/pools", 200), get("/v1/pools?per_page=1", 200), // the second has a token
		get("/v1/pools?per_page=0", 400), get("/v1/pools?next_token=garbled", 400),
		get("/v1/pools?filter="+url.QueryEscape(`pool.kind == "elastic"`), 200),
		get("/v1/pools/p1", 200), get("/v1/pools/ghost", 404),
		get("/v1/pools/p1/status", 200), get("/v1/pools/ghost/status", 404),
		{method: "PUT", path: "/v1/pools/p9", body: `{"kind":"cluster"}`, status: 200},
		{method: "PUT", path: "/v1/pools/p9", body: `{"kind":"weird"}`, status: 422},
		{method: "PUT", path: "/v1/pools/p9", body: `{"kind":`, status: 400},
		{method: "DELETE", path: "/v1/pools/p9", status: 204},
		{method: "DELETE", path: "/v1/pools/p1", status: 409},
		get("/v1/caps", 200),
		{method: "PUT", path: "/v1/caps", body: `{"maxCapacity":1000,"maxCores":0,"groups":{"rack-7":{"maxCapacity":500,"maxCores":8}}}`, status: 200},
		{method: "PUT", path: "/v1/caps", body: `{"maxCapacity":0.001}`, status: 409},
		{method: "PUT", path: "/v1/caps", body: `{"maxCores":-1}`, status: 422},
		{method: "PUT", path: "/v1/caps", body: `{"maxCores":`, status: 400},
		get("/v1/services", 200), get("/v1/services/svc1", 200), get("/v1/services/ghost", 404),
		{method: "PUT", path: "/v1/services/svc2", body: `{"pools":["p1"]}`, status: 200},
		{method: "PUT", path: "/v1/services/svc3", body: `{"pools":["p1"],"lifecycle":"lazy","provides":[{"name":"cache","count":2}],` +
			`"requirements":{"capacity":0.5,"cores":1},"constraints":["node.labels[\"rack\"] == \"r1\""]}`, status: 200},
		{method: "DELETE", path: "/v1/services/svc3", status: 204},
		{method: "DELETE", path: "/v1/services/svc2", status: 204},
	}
}

func kinNodeCases() []kinCase {
	node := `{"pool":"p1","totalCapacity":4,"totalCores":4}`
	return []kinCase{
		get("/v1/nodes", 200), get("/v1/nodes?full=true", 200),
		get("/v1/nodes?filter="+url.QueryEscape(`node.labels["az"] == "az1"`), 200),
		get("/v1/nodes?filter="+url.QueryEscape(`node.labels[`), 400),
		get("/v1/nodes/n1", 200), get("/v1/nodes/ghost", 404),
		{method: "PUT", path: "/v1/nodes/n9", body: node, status: 200},
		{method: "PUT", path: "/v1/nodes/n9", body: `{"pool":"p1","totalCapacity":0}`, status: 422},
		{method: "PUT", path: "/v1/nodes/n9", body: `{"pool":"p1","x":"` + strings.Repeat("a", 1<<20) + `"}`, status: 413},
		{method: "POST", path: "/v1/nodes/n9/cordon", status: 200},
		{method: "POST", path: "/v1/nodes/n9/uncordon", status: 200},
		{method: "POST", path: "/v1/nodes/n9/drain", status: 200},
		{method: "POST", path: "/v1/nodes/ghost/drain", status: 404},
		{method: "DELETE", path: "/v1/nodes/n9", status: 204},
		{method: "DELETE", path: "/v1/nodes/n1", status: 409},
		get("/v1/nodes/n1/assignments", 200),
		{method: "PUT", path: "/v1/nodes/n1/assignments/" + url.PathEscape("b1:0:enc@n1") + "/status", body: `{"state":"running"}`, status: 204},
		{method: "PUT", path: "/v1/nodes/n1/assignments/ghost/status", body: `{"state":"running"}`, status: 404},
	}
}

func kinBundleCases() []kinCase {
	spec := string(mustJSONNoT(validSpec("bk")))
	replace := string(mustJSONNoT(func() api.BundleSpec { s := validSpec("b1"); s.ID = ""; return s }()))
	setPlanner := func(e *env) {
		e.b.set(func(b *testBackend) {
			b.plan = func(spec fsm.BundleSpec) (PlanResult, error) { return PlanResult{Bundle: unplacedBundle(spec)}, nil }
		})
	}
	return []kinCase{
		with(kinCase{method: "POST", path: bundles, status: 201}, spec),
		with(kinCase{method: "POST", path: bundles, status: 200}, spec), // an identical retry
		with(kinCase{method: "POST", path: bundles, status: 409}, strings.Replace(spec, `"bk"`, `"b1"`, 1)),
		with(kinCase{method: "POST", path: bundles, status: 422}, strings.Replace(spec, `"p1"`, `"nope"`, 1)),
		with(kinCase{method: "POST", path: bundles + "/validate", status: 200}, spec),
		with(kinCase{method: "POST", path: bundles + "/plan", status: 501}, spec),
		with(kinCase{method: "POST", path: bundles + "/plan", status: 200, before: setPlanner}, spec),
		get(bundles, 200), get(bundles+"?per_page=1", 200), get(bundles+"?full=true&per_page=1", 200),
		get(bundles+"?prefix=b&filter="+url.QueryEscape(`bundle.state == "placed"`), 200),
		get(bundles+"?per_page=1001", 400), get(bundles+"?next_token="+encodeToken("nodes", "n1"), 400),
		get(bundles+"?filter="+url.QueryEscape(`bundle.epoch`), 400),
		get(bundles+"/b1", 200), get(bundles+"/ghost", 404),
		with(kinCase{method: "PUT", path: bundles + "/b1", status: 200}, replace),
		with(kinCase{method: "PUT", path: bundles + "/b1?cas=999", status: 409}, replace),
		{method: "DELETE", path: bundles + "/bk", status: 202},
		{env: "noLeader", method: "GET", path: bundles, status: 503},
	}
}

func kinTemplateCases() []kinCase {
	archive := func(*env) string { return string(composeArchive(1)) }
	digest := artifact.Digest(composeArchive(1))
	return []kinCase{
		{method: "PUT", path: "/v1/templates/kintpl", status: 201, bodyFn: archive},
		{method: "PUT", path: "/v1/templates/kintpl", status: 200, bodyFn: archive},
		{method: "PUT", path: "/v1/templates/bad", status: 400, bodyFn: func(*env) string { return "not an archive" }},
		get("/v1/templates", 200), get("/v1/templates?per_page=1&prefix=k", 200),
		get("/v1/templates/kintpl", 200), get("/v1/templates/ghost", 404),
		get("/v1/templates/kintpl/archive?digest="+url.QueryEscape(digest), 200),
		{method: "DELETE", path: "/v1/templates/kintpl", status: 204},
	}
}

func kinOperatorCases() []kinCase {
	return []kinCase{
		get("/v1/operator/raft", 200),
		{method: "POST", path: "/v1/operator/raft/transfer-leadership", status: 204},
		{method: "DELETE", path: "/v1/operator/raft/peers/other", status: 204},
		{method: "DELETE", path: "/v1/operator/raft/peers/ghost", status: 404},
		get("/v1/operator/keyring", 200),
		{method: "POST", path: "/v1/operator/keyring", body: `{"op":"install","key":"` + b64(gkey(7)) + `"}`, status: 204},
		{method: "POST", path: "/v1/operator/keyring", body: `{"op":"use","key":"bad"}`, status: 400},
		{method: "POST", path: "/v1/operator/keyring", body: `{"op":"remove","key":"` + b64(gkey(1)) + `"}`, status: 409},
		get("/v1/operator/snapshot", 200),
	}
}

func kinACLCases() []kinCase {
	manage := []string{api.HeaderToken, "secret-of-the-management-token"}
	reader := []string{api.HeaderToken, "secret-of-the-read-token"}
	acl := func(method, path, body string, hdr []string, status int) kinCase {
		return kinCase{env: "acl", method: method, path: path, body: body, headers: hdr, status: status}
	}
	return []kinCase{
		acl("GET", "/v1/acl/tokens", "", manage, 200),
		acl("GET", "/v1/acl/tokens?per_page=1", "", manage, 200),
		acl("POST", "/v1/acl/tokens", `{"kind":"read","secretId":"another-secret-000"}`, manage, 201),
		acl("GET", "/v1/acl/tokens/acc-read", "", manage, 200),
		acl("DELETE", "/v1/acl/tokens/acc-write", "", manage, 204),
		acl("GET", "/v1/acl/token/self", "", manage, 200),
		acl("GET", "/v1/bundles", "", nil, 401),
		acl("GET", "/v1/acl/tokens", "", reader, 403),
		acl("PUT", "/v1/operator/snapshot", "", reader, 403),
		{env: "acl", method: "PUT", path: "/v1/operator/snapshot", headers: manage, status: 204, bodyFn: ownSnapshot},
	}
}

// ownSnapshot is a snapshot of the server itself, to restore.
func ownSnapshot(e *env) string {
	resp, raw := e.do("GET", "/v1/operator/snapshot", nil, api.HeaderToken, "secret-of-the-management-token")
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("snapshot: %d", resp.StatusCode)
	}
	return string(raw)
}

func kinLimitCases() []kinCase {
	busy := func(method, path, body string) kinCase {
		return kinCase{env: "busy", method: method, path: path, body: body, headers: []string{api.HeaderToken, "holder"}, status: 429}
	}
	return []kinCase{
		busy("GET", bundles, ""), busy("GET", "/v1/nodes", ""), busy("GET", "/v1/events?index=0", ""),
		busy("POST", bundles+"/validate", string(mustJSONNoT(validSpec("x")))),
	}
}
