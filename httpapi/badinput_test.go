package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// exprChecker rejects expressions containing "!!", standing in for CEL.
type exprChecker struct{}

func (exprChecker) Check(expr string) error {
	if strings.Contains(expr, "!!") {
		return errors.New("syntax error")
	}
	return nil
}

// badInputEnv seeds a cluster with something of every kind to collide with.
func badInputEnv(t *testing.T, cfg ...func(*Config)) *env {
	t.Helper()
	b := newTestBackend("s1")
	e := newEnv(t, b, append([]func(*Config){func(c *Config) { c.Exprs = exprChecker{} }}, cfg...)...)
	b.setLeader(e.hs.URL)
	seedCluster(t, b)
	placeBundle(t, b, "b1")
	b.mustApply(t, fsm.UpsertPoolType, fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "one", Kind: fsm.PoolCluster,
		Scoring: fsm.ScoringBinpack, Tiers: []fsm.Tier{{Name: "t", Cloud: "dc"}}}})
	b.mustApply(t, fsm.UpsertPoolType, fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "el", Kind: fsm.PoolElastic,
		Scoring: fsm.ScoringBinpack, InstanceTypes: []fsm.InstanceType{{Name: "small", TotalCapacity: 2000, TotalCores: 2}}}})
	b.mustApply(t, fsm.UpsertServiceType, fsm.UpsertServiceRequest{Service: fsm.NodeService{ID: "svc1", Pools: []string{"p1"}}})
	seedTemplate(t, e)
	return e
}

// bundle renders a bundle body with one job, edited by fn.
func bundle(fn func(s *api.BundleSpec)) string {
	s := validSpec("bx")
	s.Jobs = append(s.Jobs, api.Job{Name: "mux", Requirements: api.Requirements{Capacity: 0.5}})
	if fn != nil {
		fn(&s)
	}
	return string(mustJSONNoT(s))
}

type badCase struct {
	name, method, path, body string
	status                   int
	code                     string
	finding                  string // a finding code the errors must include
}

func badInputCases() []badCase {
	return slices.Concat(badRequestCases(), listCases(), notFoundCases(), conflictCases(), tooLargeCases(), validationCases(),
		templateCases(), launchCases(), unstartableLaunchCases(), boundCases(), capsCases())
}

const bundles = "/v1/bundles"

// casBypass replaces b1 with a changed spec: accepted unless a CAS stops it.
var casBypass = bundle(func(s *api.BundleSpec) { s.ID = "b1"; s.Tags = map[string]string{"cas": "bypassed"} })

// validationCase is a 422 for a bundle edited by fn, naming finding.
func validationCase(name, finding string, fn func(s *api.BundleSpec)) badCase {
	return badCase{"422 " + name, http.MethodPost, bundles, bundle(fn), 422, api.CodeValidationFailed, finding}
}

// 400: malformed, unknown fields, trailing data, bad query parameters.
func badRequestCases() []badCase {
	return []badCase{
		{"malformed json", "POST", bundles, `{"pool":`, 400, api.CodeBadRequest, ""},
		{"empty body", "POST", bundles, ``, 400, api.CodeBadRequest, ""},
		// null decodes into nothing: every field would be its zero value.
		{"null body", "POST", bundles, ` null `, 400, api.CodeBadRequest, ""},
		{"null caps", "PUT", "/v1/caps", `null`, 400, api.CodeBadRequest, ""},
		{"null pool", "PUT", "/v1/pools/one", `null`, 400, api.CodeBadRequest, ""},
		{"null cordon", "POST", "/v1/nodes/n1/cordon", `null`, 400, api.CodeBadRequest, ""},
		{"unknown field", "POST", bundles, `{"pool":"p1","jobs":[],"bogus":1}`, 400, api.CodeBadRequest, ""},
		{"unknown nested field", "POST", bundles, `{"pool":"p1","jobs":[{"name":"a","requirements":{"cpu":1}}]}`, 400, api.CodeBadRequest, ""},
		{"trailing object", "POST", bundles, bundle(nil) + `{}`, 400, api.CodeBadRequest, ""},
		{"trailing garbage", "POST", bundles, bundle(nil) + ` x`, 400, api.CodeBadRequest, ""},
		{"wrong type", "POST", bundles, `{"pool":5,"jobs":[]}`, 400, api.CodeBadRequest, ""},
		{"number overflow", "POST", bundles, `{"pool":"p1","jobs":[{"name":"a","requirements":{"capacity":1e400}}]}`, 400, api.CodeBadRequest, ""},
		{"fractional cores", "POST", bundles, `{"pool":"p1","jobs":[{"name":"a","requirements":{"cores":1.5}}]}`, 400, api.CodeBadRequest, ""},
		{"validate malformed", "POST", bundles + "/validate", `[`, 400, api.CodeBadRequest, ""},
		{"plan unknown field", "POST", bundles + "/plan", `{"nope":true}`, 400, api.CodeBadRequest, ""},
		{"replace id mismatch", "PUT", bundles + "/b1", bundle(func(s *api.BundleSpec) { s.ID = "b2" }), 400, api.CodeBadRequest, ""},
		{"replace bad cas", "PUT", bundles + "/b1?cas=abc", bundle(nil), 400, api.CodeBadRequest, ""},
		{"replace zero cas", "PUT", bundles + "/b1?cas=0", bundle(nil), 400, api.CodeBadRequest, ""},
		// A known parameter in another case would be ignored: an
		// unconditional replace.
		{"replace cas in another case", "PUT", bundles + "/b1?Cas=1", casBypass, 400, api.CodeBadRequest, ""},
		{"list stale in another case", "GET", bundles + "?STALE", ``, 400, api.CodeBadRequest, ""},
		{"node malformed", "PUT", "/v1/nodes/n9", `{"pool":`, 400, api.CodeBadRequest, ""},
		{"node unknown field", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":1,"status":"ready"}`, 400, api.CodeBadRequest, ""},
		{"node id mismatch", "PUT", "/v1/nodes/n9", `{"id":"n8","pool":"p1","totalCapacity":1}`, 400, api.CodeBadRequest, ""},
		{"pool unknown field", "PUT", "/v1/pools/p9", `{"kind":"cluster","color":"red"}`, 400, api.CodeBadRequest, ""},
		{"pool trailing", "PUT", "/v1/pools/p9", `{} {}`, 400, api.CodeBadRequest, ""},
		{"service malformed", "PUT", "/v1/services/s9", `{"pools":["p1"]`, 400, api.CodeBadRequest, ""},
		{"status unknown field", "PUT", "/v1/nodes/n1/assignments/x/status", `{"state":"running","code":1}`, 400, api.CodeBadRequest, ""},
		{"cordon body", "POST", "/v1/nodes/n1/cordon", `{"x":1}`, 400, api.CodeBadRequest, ""},
		{"transfer unknown field", "POST", "/v1/operator/raft/transfer-leadership", `{"idd":"x"}`, 400, api.CodeBadRequest, ""},
		{"bad node status filter", "GET", "/v1/nodes?status=bogus", ``, 400, api.CodeBadRequest, ""},
		{"bad bundle state filter", "GET", bundles + "?state=bogus", ``, 400, api.CodeBadRequest, ""},
		{"bad index", "GET", bundles + "?index=-1", ``, 400, api.CodeBadRequest, ""},
		{"bad wait", "GET", bundles + "?index=3&wait=forever", ``, 400, api.CodeBadRequest, ""},
		{"bad stale", "GET", bundles + "?stale=maybe", ``, 400, api.CodeBadRequest, ""},
		{"stale and consistent", "GET", bundles + "?stale&consistent", ``, 400, api.CodeBadRequest, ""},
		{"bad force", "DELETE", "/v1/nodes/n1?force=perhaps", ``, 400, api.CodeBadRequest, ""},
		{"bad events index", "GET", "/v1/events?index=x", ``, 400, api.CodeBadRequest, ""},
		{"method not allowed", "PATCH", bundles + "/b1", `{}`, 405, api.CodeBadRequest, ""},
		// A query that does not parse: echo dropped the pair, so the CAS was
		// ignored and the replace went through unconditionally.
		{"malformed query on a CAS replace", "PUT", bundles + "/b1?cas=1%", casBypass, 400, api.CodeBadRequest, ""},
		{"malformed query on a list", "GET", bundles + "?filter=bundle.id%zz", ``, 400, api.CodeBadRequest, ""},
		{"malformed query on a delete", "DELETE", "/v1/nodes/n1?force=%", ``, 400, api.CodeBadRequest, ""},
		{"query parameter given twice on a CAS replace", "PUT", bundles + "/b1?cas=1&cas=9", casBypass, 400, api.CodeBadRequest, ""},
		{"query parameter given twice on a list", "GET", bundles + "?per_page=1&per_page=1000", ``, 400, api.CodeBadRequest, ""},
	}
}

// 400: list paging and filtering (list.go, filter.go), on every list.
func listCases() []badCase {
	nodesToken := encodeToken("nodes", "n1")
	garbled := "bm90IGEgdG9rZW4" // base64 of "not a token"
	var out []badCase
	for _, path := range []string{bundles, "/v1/nodes", "/v1/pools", "/v1/services", "/v1/acl/tokens"} {
		bad := func(name, query string) badCase {
			return badCase{path + " " + name, "GET", path + "?" + query, ``, 400, api.CodeBadRequest, ""}
		}
		out = append(out,
			bad("per_page 0", "per_page=0"),
			bad("per_page -1", "per_page=-1"),
			bad("per_page 1e9", "per_page=1e9"),
			bad("per_page above the maximum", "per_page=1001"),
			bad("per_page not a number", "per_page=ten"),
			bad("garbled token", "next_token="+garbled),
			bad("token not base64", "next_token=%25%25%25"),
			bad("filter does not compile", "filter="+url.QueryEscape(`x ==`)),
			bad("filter unknown variable", "filter="+url.QueryEscape(`nobody.id == "x"`)),
			bad("filter returns a string", "filter="+url.QueryEscape(`"yes"`)),
			bad("filter too long", "filter="+strings.Repeat("a", maxFilterLen+1)),
			bad("prefix too long", "prefix="+strings.Repeat("a", maxPrefixLen+1)),
			bad("bad full", "full=perhaps"),
		)
	}
	return append(out,
		badCase{"bundles: a nodes token", "GET", bundles + "?next_token=" + nodesToken, ``, 400, api.CodeBadRequest, ""},
		badCase{"bundles: filter returns a number at run time", "GET", bundles + "?filter=" + url.QueryEscape(`bundle.epoch`), ``, 400, api.CodeBadRequest, ""},
		badCase{"nodes: filter of another list's variable", "GET", "/v1/nodes?filter=" + url.QueryEscape(`bundle.id == "b1"`), ``, 400, api.CodeBadRequest, ""},
	)
}

func notFoundCases() []badCase {
	return []badCase{
		{"no route", "GET", "/v1/nope", ``, 404, api.CodeNotFound, ""},
		{"get bundle", "GET", bundles + "/ghost", ``, 404, api.CodeNotFound, ""},
		{"get node", "GET", "/v1/nodes/ghost", ``, 404, api.CodeNotFound, ""},
		{"get pool", "GET", "/v1/pools/ghost", ``, 404, api.CodeNotFound, ""},
		{"get service", "GET", "/v1/services/ghost", ``, 404, api.CodeNotFound, ""},
		{"delete bundle", "DELETE", bundles + "/ghost", ``, 404, api.CodeNotFound, ""},
		{"delete node", "DELETE", "/v1/nodes/ghost", ``, 404, api.CodeNotFound, ""},
		{"delete pool", "DELETE", "/v1/pools/ghost", ``, 404, api.CodeNotFound, ""},
		{"delete service", "DELETE", "/v1/services/ghost", ``, 404, api.CodeNotFound, ""},
		{"replace unknown bundle", "PUT", bundles + "/ghost", bundle(func(s *api.BundleSpec) { s.ID = "" }), 404, api.CodeNotFound, ""},
		{"cordon unknown node", "POST", "/v1/nodes/ghost/cordon", ``, 404, api.CodeNotFound, ""},
		{"status of unknown assignment", "PUT", "/v1/nodes/n1/assignments/ghost/status", `{"state":"running"}`, 404, api.CodeNotFound, ""},
		{"assignments of unknown node", "GET", "/v1/nodes/ghost/assignments", ``, 404, api.CodeNotFound, ""},
	}
}

func conflictCases() []badCase {
	return []badCase{
		{"create exists with another spec", "POST", bundles, bundle(func(s *api.BundleSpec) { s.ID = "b1" }), 409, api.CodeConflict, ""},
		{"replace cas mismatch", "PUT", bundles + "/b1?cas=999", bundle(func(s *api.BundleSpec) { s.ID = "" }), 409, api.CodeCASMismatch, ""},
		{"deregister busy node", "DELETE", "/v1/nodes/n1", ``, 409, api.CodeInUse, ""},
		{"delete pool in use", "DELETE", "/v1/pools/p1", ``, 409, api.CodeInUse, ""},
		{"move busy node", "PUT", "/v1/nodes/n1", `{"pool":"p2","totalCapacity":8,"totalCores":8}`, 409, api.CodeInUse, ""},
		{"shrink below reserved", "PUT", "/v1/nodes/n1", `{"pool":"p1","totalCapacity":1,"totalCores":8,"gpus":[{"index":0,"totalCapacity":1}]}`, 409, api.CodeConflict, ""},
	}
}

// capsCases: PUT /v1/caps refuses bad caps at the edge and a cap below
// what is held in the FSM (b1 holds 2.5 units), changing nothing.
func capsCases() []badCase {
	const caps = "/v1/caps"
	many := `{"groups":{`
	for i := range 257 {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`"g%d":{"maxCores":1}`, i)
	}
	many += `}}`
	return []badCase{
		{"caps negative", "PUT", caps, `{"maxCores":-1}`, 422, api.CodeValidationFailed, ""},
		{"caps negative maxCapacity", "PUT", caps, `{"maxCapacity":-1}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"caps negative group", "PUT", caps, `{"groups":{"g":{"maxCapacity":-1}}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"caps below resolution", "PUT", caps, `{"maxCapacity":0.0001}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"caps absurd", "PUT", caps, `{"maxCapacity":1000000000001}`, 422, api.CodeValidationFailed, fsm.CodeLimitExceeded},
		{"caps bad group name", "PUT", caps, `{"groups":{"Rack 7":{"maxCores":1}}}`, 422, api.CodeValidationFailed, ""},
		{"caps 257 groups", "PUT", caps, many, 422, api.CodeValidationFailed, fsm.CodeLimitExceeded},
		{"caps unknown field", "PUT", caps, `{"maxCpu":1}`, 400, api.CodeBadRequest, ""},
		{"caps below usage", "PUT", caps, `{"maxCapacity":1}`, 409, api.CodeConflict, ""},
		{"pool bad capGroup", "PUT", "/v1/pools/p9", `{"capGroup":"Rack 7"}`, 422, api.CodeValidationFailed, ""},
	}
}

func tooLargeCases() []badCase {
	huge := `{"pool":"p1","tags":{"x":"` + strings.Repeat("a", 1<<20+1) + `"},"jobs":[]}`
	return []badCase{
		{"bundle too large", "POST", bundles, huge, 413, api.CodeBodyTooLarge, ""},
		{"node too large", "PUT", "/v1/nodes/n9", huge, 413, api.CodeBodyTooLarge, ""},
		{"validate too large", "POST", bundles + "/validate", huge, 413, api.CodeBodyTooLarge, ""},
	}
}

// 422: each class of static validation failure, and edge conversions.
func validationCases() []badCase {
	v := validationCase
	return []badCase{
		v("duplicate job", fsm.CodeDuplicateJobName, func(s *api.BundleSpec) { s.Jobs[1].Name = "enc" }),
		v("unknown job in placement", fsm.CodeUnknownJobNameInPlacement, func(s *api.BundleSpec) { s.Jobs[0].CoLocateWith = []string{"x"} }),
		v("self reference", fsm.CodeSelfReferenceInPlacement, func(s *api.BundleSpec) { s.Jobs[0].SeparateFrom = []string{"enc"} }),
		v("contradictory placement", fsm.CodeContradictoryPlacement, func(s *api.BundleSpec) {
			s.Jobs[0].CoLocateWith, s.Jobs[0].SeparateFrom = []string{"mux"}, []string{"mux"}
		}),
		v("empty pool", fsm.CodeEmptyPoolList, func(s *api.BundleSpec) { s.Pool = "" }),
		v("unknown pool", fsm.CodeUnknownPoolName, func(s *api.BundleSpec) { s.Pool = "nope" }),
		v("unknown resilience pool", fsm.CodeUnknownResiliencePool, func(s *api.BundleSpec) { s.Resilience = &api.Resilience{Pool: "nope"} }),
		v("resilience unsatisfiable", fsm.CodeResilienceUnsatisfiable, func(s *api.BundleSpec) {
			s.Pool, s.Resilience = "one", &api.Resilience{SameCloud: api.Forbid}
		}),
		v("invalid expression", fsm.CodeInvalidExpression, func(s *api.BundleSpec) { s.Jobs[0].Constraints = []string{"node.id !! 1"} }),
		v("negative capacity", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs[0].Requirements.Capacity = -1 }),
		v("capacity below resolution", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs[0].Requirements.Capacity = 0.0001 }),
		v("negative cores", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs[0].Requirements.Cores = -2 }),
		v("negative memory", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs[0].Requirements.MemoryMiB = -1 }),
		v("negative memory limit", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs[0].Requirements.MemoryLimitMiB = -512 }),
		v("memory limit below request", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) {
			s.Jobs[0].Requirements.MemoryMiB, s.Jobs[0].Requirements.MemoryLimitMiB = 1024, 512
		}),
		v("bad priority", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Priority = "platinum" }),
		v("bad job priority", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs[1].Priority = "platinum" }),
		v("bad startAt", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.StartAt = "tomorrow" }),
		v("stop before start", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) {
			s.StartAt, s.StopAt = "2030-01-02T00:00:00Z", "2030-01-01T00:00:00Z"
		}),
		v("bad id", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.ID = "Bad ID" }),
		v("no jobs", fsm.CodeInvalidRequirement, func(s *api.BundleSpec) { s.Jobs = nil }),
		v("unsatisfiable in elastic pool", fsm.CodeUnsatisfiableCores, func(s *api.BundleSpec) {
			s.Pool = "el"
			s.Jobs[0].Requirements.Cores = 4
		}),
		{"422 replace invalid", "PUT", bundles + "/b1", bundle(func(s *api.BundleSpec) { s.ID, s.Priority = "", "x" }), 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 plan invalid", "POST", bundles + "/plan", bundle(func(s *api.BundleSpec) { s.Pool = "" }), 422, api.CodeValidationFailed, fsm.CodeEmptyPoolList},
		{"422 node zero capacity", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":0}`, 422, api.CodeValidationFailed, ""},
		{"422 node negative capacity", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":-4}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 node negative gpu capacity", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"gpus":[{"index":0,"totalCapacity":-1}]}`,
			422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 node utilization above 1", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"utilizationCap":1.5}`, 422, api.CodeValidationFailed, ""},
		{"422 node gpu below resolution", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"gpus":[{"index":0,"totalCapacity":0.0001}]}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 node bad id", "PUT", "/v1/nodes/N_9", `{"pool":"p1","totalCapacity":4}`, 422, api.CodeValidationFailed, ""},
		{"422 node negative memory", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"totalMemoryMiB":-1}`, 422, api.CodeValidationFailed, ""},
		{"422 pool negative memory cap", "PUT", "/v1/pools/p9", `{"caps":{"maxMemoryMiB":-1}}`, 422, api.CodeValidationFailed, ""},
		{"422 pool negative memory default", "PUT", "/v1/pools/p9", `{"defaults":{"memoryMiB":-1}}`, 422, api.CodeValidationFailed, ""},
		{"422 pool bad kind", "PUT", "/v1/pools/p9", `{"kind":"weird"}`, 422, api.CodeValidationFailed, ""},
		{"422 pool bad duration", "PUT", "/v1/pools/p9", `{"kind":"elastic","idleTimeout":"soon"}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 pool provisioner url with credentials", "PUT", "/v1/pools/p9", `{"kind":"elastic","provisioner":{"url":"https://u:secret@p.example/v1/nodes"}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 pool provisioner url not http", "PUT", "/v1/pools/p9", `{"kind":"elastic","provisioner":{"url":"ftp://p.example/nodes"}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 pool provisioner command empty", "PUT", "/v1/pools/p9", `{"kind":"elastic","provisioner":{"command":[""]}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 pool provisioner url relative", "PUT", "/v1/pools/p9", `{"kind":"elastic","provisioner":{"url":"/v1/nodes"}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 pool negative cap", "PUT", "/v1/pools/p9", `{"caps":{"maxCapacity":-1}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 service lifecycle", "PUT", "/v1/services/s9", `{"pools":["p1"],"lifecycle":"sometimes"}`, 422, api.CodeValidationFailed, ""},
		{"422 lazy service providing nothing", "PUT", "/v1/services/s9", `{"pools":["p1"],"lifecycle":"lazy"}`, 422, api.CodeValidationFailed, api.FindingLazyServiceProvidesNothing},
		{"422 service constraint", "PUT", "/v1/services/s9", `{"pools":["p1"],"constraints":["a !! b"]}`, 422, api.CodeValidationFailed, api.FindingInvalidExpression},
		{"422 service negative capacity", "PUT", "/v1/services/s9", `{"pools":["p1"],"requirements":{"capacity":-1}}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 service too many cores", "PUT", "/v1/services/s9", `{"pools":["p1"],"requirements":{"cores":5000}}`, 422, api.CodeValidationFailed, api.FindingInvalidRequirement},
		{"422 service no pools", "PUT", "/v1/services/s9", `{"pools":[]}`, 422, api.CodeValidationFailed, ""},
		{"422 status state", "PUT", "/v1/nodes/n1/assignments/x/status", `{"state":"exploded"}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
		{"422 exit code without exited", "PUT", "/v1/nodes/n1/assignments/x/status", `{"state":"running","exitCode":1}`, 422, api.CodeValidationFailed, ""},
		v("unknown kind", fsm.CodeInvalidKind, func(s *api.BundleSpec) { s.Kind = "daemon" }),
		v("service count 0", fsm.CodeInvalidCount, func(s *api.BundleSpec) { s.Kind = api.KindService }),
		v("service count above 10000", fsm.CodeInvalidCount, func(s *api.BundleSpec) { s.Kind, s.Count = api.KindService, 10_001 }),
		v("negative maxPerNode", fsm.CodeInvalidCount, func(s *api.BundleSpec) { s.Kind, s.Count, s.MaxPerNode = api.KindService, 2, -1 }),
		v("count on a resilient bundle", fsm.CodeKindMismatch, func(s *api.BundleSpec) { s.Count = 3 }),
		v("resilience on a service", fsm.CodeKindMismatch, func(s *api.BundleSpec) {
			s.Kind, s.Count, s.Resilience = api.KindService, 2, &api.Resilience{}
		}),
		v("restart on a service", fsm.CodeKindMismatch, func(s *api.BundleSpec) {
			s.Kind, s.Count, s.Restart = api.KindService, 2, &api.RestartPolicy{Attempts: 1}
		}),
		v("negative restart attempts", fsm.CodeInvalidRestart, func(s *api.BundleSpec) {
			s.Kind, s.Restart = api.KindBatch, &api.RestartPolicy{Attempts: -1}
		}),
		v("negative restart delay", fsm.CodeInvalidRestart, func(s *api.BundleSpec) {
			s.Kind, s.Restart = api.KindBatch, &api.RestartPolicy{Attempts: 1, Delay: "-5s"}
		}),
		v("negative ttl", fsm.CodeInvalidRestart, func(s *api.BundleSpec) { s.Kind, s.TTLAfterFinished = api.KindBatch, "-1h" }),
		v("bad ttl", fsm.CodeInvalidRestart, func(s *api.BundleSpec) { s.Kind, s.TTLAfterFinished = api.KindBatch, "later" }),
		{"422 scale to 0", "PUT", bundles + "/b1", bundle(func(s *api.BundleSpec) { s.ID, s.Kind = "b1", api.KindService }), 422, api.CodeValidationFailed, fsm.CodeInvalidCount},
	}
}

// TestBadInput checks every rejection's status, code and body shape, and
// that no rejected request changes state. Rejections decided at the edge
// (400, 413, 422) must not even reach Raft.
func TestBadInput(t *testing.T) {
	e := badInputEnv(t)
	for _, tc := range badInputCases() {
		t.Run(tc.name, func(t *testing.T) {
			before, applies := stateHash(t, e.b.State()), e.b.applyCount()
			resp, raw := e.do(tc.method, tc.path, []byte(tc.body))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			got := errorBody(t, raw)
			if got.Code != tc.code {
				t.Fatalf("code %q, want %q: %s", got.Code, tc.code, raw)
			}
			// DESIGN §6.2: a 422 carries its findings, each with a code and a message.
			if resp.StatusCode == 422 && (len(got.Errors) == 0 || slices.ContainsFunc(got.Errors, func(f api.Finding) bool {
				return f.Code == "" || f.Message == ""
			})) {
				t.Fatalf("a 422 without its findings: %s", raw)
			}
			if tc.finding != "" && !slices.ContainsFunc(got.Errors, func(f api.Finding) bool { return f.Code == tc.finding }) {
				t.Fatalf("errors lack %q: %s", tc.finding, raw)
			}
			if stateHash(t, e.b.State()) != before {
				t.Fatal("state changed")
			}
			edge := tc.status == 400 || tc.status == 413 || tc.status == 422 || tc.status == 405
			if edge && e.b.applyCount() != applies {
				t.Fatal("an edge rejection reached Apply")
			}
		})
	}
}
