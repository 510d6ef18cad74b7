package httpapi

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/amserver/amserver/api"
)

// The tests in openapi*_test.go hold docs/openapi.yaml to the real router:
// routes, parameters, consistency classes, schemas and examples. Operations
// marked x-amserver-planned are exempt from "must be served" and must not be served while they
// carry the mark: whoever adds them removes it, and documents them for real.

const openAPIPath = "../docs/openapi.yaml"

// oaDoc is the part of an OpenAPI 3.0 document these tests read.
type oaDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas       map[string]*oaSchema     `json:"schemas"`
		Parameters    map[string]oaParam       `json:"parameters"`
		Responses     map[string]oaResponse    `json:"responses"`
		RequestBodies map[string]oaRequestBody `json:"requestBodies"`
		Examples      map[string]oaExample     `json:"examples"`
	} `json:"components"`
}

type oaOperation struct {
	OperationID string                `json:"operationId"`
	Summary     string                `json:"summary"`
	Consistency string                `json:"x-amserver-consistency"`
	ACL         string                `json:"x-amserver-acl"`
	Planned     bool                  `json:"x-amserver-planned"`
	Parameters  []oaParam             `json:"parameters"`
	RequestBody *oaRequestBody        `json:"requestBody"`
	Responses   map[string]oaResponse `json:"responses"`
}

type oaParam struct {
	Ref      string    `json:"$ref"`
	Name     string    `json:"name"`
	In       string    `json:"in"`
	Required bool      `json:"required"`
	Schema   *oaSchema `json:"schema"`
}

type oaRequestBody struct {
	Ref     string             `json:"$ref"`
	Content map[string]oaMedia `json:"content"`
}

type oaResponse struct {
	Ref     string                     `json:"$ref"`
	Headers map[string]json.RawMessage `json:"headers"`
	Content map[string]oaMedia         `json:"content"`
}

type oaMedia struct {
	Schema     *oaSchema            `json:"schema"`
	Example    json.RawMessage      `json:"example"`
	Examples   map[string]oaExample `json:"examples"`
	LineSchema *oaSchema            `json:"x-amserver-line-schema"` // NDJSON: each line's schema
}

type oaExample struct {
	Ref   string          `json:"$ref"`
	Value json.RawMessage `json:"value"`
}

type oaSchema struct {
	Ref                  string               `json:"$ref"`
	Type                 string               `json:"type"`
	Format               string               `json:"format"`
	Properties           map[string]*oaSchema `json:"properties"`
	Items                *oaSchema            `json:"items"`
	AdditionalProperties *oaSchema            `json:"additionalProperties"`
	AllOf                []*oaSchema          `json:"allOf"`
	AnyOf                []*oaSchema          `json:"anyOf"`
	Required             []string             `json:"required"`
	Enum                 []string             `json:"enum"`
}

// op is one documented operation, its references resolved.
type op struct {
	key    string // "GET /v1/pools/{name}"
	path   string
	method string
	oaOperation
}

var loadDoc = sync.OnceValues(func() (*oaDoc, error) {
	raw, err := os.ReadFile(openAPIPath)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	var d oaDoc
	return &d, json.Unmarshal(js, &d)
})

func openAPI(t *testing.T) *oaDoc {
	t.Helper()
	d, err := loadDoc()
	if err != nil {
		t.Fatalf("%s: %v", openAPIPath, err)
	}
	return d
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

// ops returns every documented operation, path-level parameters merged in
// and every $ref resolved, by key.
func (d *oaDoc) ops(t *testing.T) map[string]op {
	t.Helper()
	out := map[string]op{}
	for path, item := range d.Paths {
		var shared []oaParam
		if raw, ok := item["parameters"]; ok {
			mustUnmarshal(t, raw, &shared)
		}
		for name, raw := range item {
			if !slices.Contains(httpMethods, name) {
				continue
			}
			o := op{path: path, method: strings.ToUpper(name)}
			o.key = o.method + " " + path
			mustUnmarshal(t, raw, &o.oaOperation)
			o.Parameters = d.params(t, append(slices.Clone(shared), o.Parameters...))
			if o.RequestBody != nil && o.RequestBody.Ref != "" {
				rb := d.Components.RequestBodies[refName(t, o.RequestBody.Ref, "requestBodies")]
				o.RequestBody = &rb
			}
			resps := map[string]oaResponse{}
			for status, r := range o.Responses {
				if r.Ref != "" {
					r = d.Components.Responses[refName(t, r.Ref, "responses")]
				}
				resps[status] = r
			}
			o.Responses = resps
			out[o.key] = o
		}
	}
	return out
}

func (d *oaDoc) params(t *testing.T, list []oaParam) []oaParam {
	t.Helper()
	out := make([]oaParam, len(list))
	for i, p := range list {
		if p.Ref != "" {
			p = d.Components.Parameters[refName(t, p.Ref, "parameters")]
		}
		if p.Name == "" || p.In == "" {
			t.Fatalf("parameter %d of %v has no name or location", i, list)
		}
		out[i] = p
	}
	return out
}

// schema follows a $ref to its component schema.
func (d *oaDoc) schema(t *testing.T, s *oaSchema) *oaSchema {
	t.Helper()
	for s != nil && s.Ref != "" {
		s = d.Components.Schemas[refName(t, s.Ref, "schemas")]
	}
	if s == nil {
		t.Fatal("dangling schema reference")
	}
	return s
}

// examples lists a media type's example values by name.
func (d *oaDoc) examples(t *testing.T, m oaMedia) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	if len(m.Example) > 0 {
		out["example"] = m.Example
	}
	for name, ex := range m.Examples {
		if ex.Ref != "" {
			ex = d.Components.Examples[refName(t, ex.Ref, "examples")]
		}
		if len(ex.Value) == 0 {
			t.Fatalf("example %q has no value", name)
		}
		out[name] = ex.Value
	}
	return out
}

// refName checks that ref points into components/<kind> and names it.
func refName(t *testing.T, ref, kind string) string {
	t.Helper()
	prefix := "#/components/" + kind + "/"
	if !strings.HasPrefix(ref, prefix) {
		t.Fatalf("reference %q does not point into components/%s", ref, kind)
	}
	return strings.TrimPrefix(ref, prefix)
}

func mustUnmarshal(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}

// opSpec is what an operation takes and answers, from the handlers and the
// client, independently of the document.
type opSpec struct {
	req    reflect.Type            // the handler's request type; nil: no JSON body
	binary bool                    // the body is a raw stream (snapshot restore)
	ok     map[string]reflect.Type // 2xx status → the client's answer type; nil: no JSON body
	// full is a list's answer type with ?full=true (examples named "full").
	full reflect.Type
}

func typ[T any]() reflect.Type { return reflect.TypeFor[T]() }

func answers(status string, t reflect.Type) map[string]reflect.Type {
	return map[string]reflect.Type{status: t}
}

// routeSpecs covers every route routes.go registers: the request type each
// handler decodes (decode.go) and the type the Go client decodes each
// success into (api/client_*.go).
var routeSpecs = map[string]opSpec{
	"GET /v1/status/leader":   {ok: answers("200", typ[api.Leader]())},
	"GET /v1/status/peers":    {ok: answers("200", typ[[]api.Peer]())},
	"GET /v1/health":          {ok: answers("200", typ[api.Health]())},
	"GET /v1/members":         {ok: answers("200", typ[[]api.Member]())},
	"GET /v1/operator/digest": {ok: answers("200", typ[api.StateDigest]())},
	"GET /v1/pools":           {ok: answers("200", typ[[]api.Pool]())}, // a page

	"GET /v1/pools/{name}":                        {ok: answers("200", typ[api.Pool]())},
	"PUT /v1/pools/{name}":                        {req: typ[api.Pool](), ok: answers("200", typ[api.Pool]())},
	"GET /v1/pools/{name}/status":                 {ok: answers("200", typ[api.PoolStatus]())},
	"DELETE /v1/pools/{name}":                     {ok: answers("204", nil)},
	"GET /v1/caps":                                {ok: answers("200", typ[api.ClusterCaps]())},
	"PUT /v1/caps":                                {req: typ[api.ClusterCaps](), ok: answers("200", typ[api.ClusterCaps]())},
	"GET /v1/nodes":                               {ok: answers("200", typ[[]api.NodeSummary]()), full: typ[[]api.Node]()},
	"GET /v1/nodes/{id}":                          {ok: answers("200", typ[api.Node]())},
	"PUT /v1/nodes/{id}":                          {req: typ[api.NodeSpec](), ok: answers("200", typ[api.Node]())},
	"DELETE /v1/nodes/{id}":                       {ok: answers("204", nil)},
	"POST /v1/nodes/{id}/cordon":                  {ok: answers("200", typ[api.Node]())},
	"POST /v1/nodes/{id}/uncordon":                {ok: answers("200", typ[api.Node]())},
	"POST /v1/nodes/{id}/drain":                   {ok: answers("200", typ[api.Node]())},
	"GET /v1/nodes/{id}/assignments":              {ok: answers("200", typ[[]api.Assignment]())},
	"PUT /v1/nodes/{id}/assignments/{aid}/status": {req: typ[api.AssignmentStatus](), ok: answers("204", nil)},
	"POST /v1/bundles": {req: typ[api.BundleSpec](), ok: map[string]reflect.Type{
		"201": typ[api.CreateResponse](), "200": typ[api.CreateResponse]()}},
	"POST /v1/bundles/validate":                  {req: typ[api.BundleSpec](), ok: answers("200", typ[api.ValidateResponse]())},
	"POST /v1/bundles/plan":                      {req: typ[api.BundleSpec](), ok: answers("200", typ[api.PlanResponse]())},
	"GET /v1/bundles":                            {ok: answers("200", typ[[]api.BundleSummary]()), full: typ[[]api.Bundle]()},
	"GET /v1/bundles/{id}":                       {ok: answers("200", typ[api.Bundle]())},
	"PUT /v1/bundles/{id}":                       {req: typ[api.BundleSpec](), ok: answers("200", typ[api.CreateResponse]())},
	"DELETE /v1/bundles/{id}":                    {ok: answers("202", typ[api.Bundle]())},
	"GET /v1/services":                           {ok: answers("200", typ[[]api.NodeService]())},
	"GET /v1/services/{id}":                      {ok: answers("200", typ[api.NodeService]())},
	"PUT /v1/services/{id}":                      {req: typ[api.NodeService](), ok: answers("200", typ[api.NodeService]())},
	"DELETE /v1/services/{id}":                   {ok: answers("204", nil)},
	"GET /v1/assignments/{id}/logs":              {ok: answers("200", nil)},              // the workload's text
	"GET /v1/events":                             {ok: answers("200", typ[api.Event]())}, // per NDJSON line
	"GET /v1/operator/snapshot":                  {ok: answers("200", nil)},
	"PUT /v1/operator/snapshot":                  {binary: true, ok: answers("204", nil)},
	"GET /v1/operator/raft":                      {ok: answers("200", typ[api.RaftConfiguration]())},
	"POST /v1/operator/raft/transfer-leadership": {req: typ[api.TransferLeadershipRequest](), ok: answers("204", nil)},
	"DELETE /v1/operator/raft/peers/{id}":        {ok: answers("204", nil)},
	"GET /v1/acl/tokens":                         {ok: answers("200", typ[[]api.ACLToken]())},
	"POST /v1/acl/tokens":                        {req: typ[api.ACLTokenRequest](), ok: answers("201", typ[api.ACLTokenCreated]())},
	"GET /v1/acl/tokens/{accessor}":              {ok: answers("200", typ[api.ACLToken]())},
	"DELETE /v1/acl/tokens/{accessor}":           {ok: answers("204", nil)},
	"GET /v1/acl/token/self":                     {ok: answers("200", typ[api.ACLToken]())},
	"GET /v1/templates":                          {ok: answers("200", typ[[]api.Template]())},
	"GET /v1/templates/{name}":                   {ok: answers("200", typ[api.Template]())},
	"PUT /v1/templates/{name}": {binary: true, ok: map[string]reflect.Type{
		"201": typ[api.Template](), "200": typ[api.Template]()}},
	"DELETE /v1/templates/{name}":      {ok: answers("204", nil)},
	"GET /v1/templates/{name}/archive": {ok: answers("200", nil)}, // the archive's bytes
	"GET /metrics":                     {ok: answers("200", nil)}, // Prometheus text
	// The web UI (routes_ui.go): static files and redirects, no JSON.
	"GET /":                     {ok: answers("302", nil)},
	"GET /ui":                   {ok: answers("302", nil)},
	"GET /ui/":                  {ok: answers("200", nil)},
	"GET /ui/{file}":            {ok: answers("200", nil)},
	"GET /v1/operator/keyring":  {ok: answers("200", typ[api.Keyring]())},
	"POST /v1/operator/keyring": {req: typ[api.KeyringRequest](), ok: answers("204", nil)},
}

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// servedRoutes are the routes echo registers, in OpenAPI form (:id → {id}).
func servedRoutes(t *testing.T) []string {
	t.Helper()
	s := New(Config{Backend: newTestBackend("s1"), Metrics: testMetricsHandler(), UI: testUI})
	var out []string
	for _, r := range s.echo.Routes() {
		if strings.HasPrefix(r.Name, "github.com/labstack/echo") {
			continue // echo's own handlers (not-found and the like), not ours
		}
		out = append(out, r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}"))
	}
	slices.Sort(out)
	return out
}

func TestOpenAPIRoutesMatchRouter(t *testing.T) {
	ops := openAPI(t).ops(t)
	served := servedRoutes(t)
	if len(served) == 0 {
		t.Fatal("the router registers no routes")
	}
	for _, key := range served {
		o, ok := ops[key]
		switch {
		case !ok:
			t.Errorf("%s is served but not documented in %s", key, openAPIPath)
		case o.Planned:
			t.Errorf("%s is served now: remove its x-amserver-planned mark and document it fully", key)
		}
		if _, ok := routeSpecs[key]; !ok {
			t.Errorf("%s is served but routeSpecs does not say what it takes and answers", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		if !ops[key].Planned && !slices.Contains(served, key) {
			t.Errorf("%s is documented but the router does not serve it", key)
		}
	}
	for key := range routeSpecs {
		if !slices.Contains(served, key) {
			t.Errorf("routeSpecs lists %s, which the router does not serve", key)
		}
	}
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// Every operation is identified, summarised, classed and parameterised the
// way a client generator needs.
func TestOpenAPIOperationsComplete(t *testing.T) {
	ids := map[string]string{}
	for key, o := range openAPI(t).ops(t) {
		if o.OperationID == "" || o.Summary == "" || len(o.Responses) == 0 {
			t.Errorf("%s needs an operationId, a summary and responses", key)
		}
		if prev, dup := ids[o.OperationID]; dup {
			t.Errorf("operationId %q names both %s and %s", o.OperationID, prev, key)
		}
		ids[o.OperationID] = key
		if !o.Planned && !slices.Contains([]string{"local", "read", "write"}, o.Consistency) {
			t.Errorf("%s: x-amserver-consistency %q is not local, read or write", key, o.Consistency)
		}
		var inPath, declared []string
		for _, m := range pathParam.FindAllStringSubmatch(o.path, -1) {
			inPath = append(inPath, m[1])
		}
		for _, p := range o.Parameters {
			if p.In == "path" {
				declared = append(declared, p.Name)
				if !p.Required {
					t.Errorf("%s: path parameter %s must be required", key, p.Name)
				}
			}
		}
		slices.Sort(inPath)
		slices.Sort(declared)
		if !slices.Equal(inPath, declared) {
			t.Errorf("%s: path has parameters %v, declares %v", key, inPath, declared)
		}
		checkHeaders(t, o)
	}
}

// checkHeaders: reads say their index, and reads of the read class also
// how stale they may be.
func checkHeaders(t *testing.T, o op) {
	t.Helper()
	for status, r := range o.Responses {
		if !strings.HasPrefix(status, "2") || o.Planned {
			continue
		}
		want := []string{}
		// The UI's static files are no read of the state: no index.
		if o.method == http.MethodGet && strings.HasPrefix(o.path, "/v1/") {
			want = append(want, api.HeaderIndex)
		}
		if o.Consistency == "read" {
			want = append(want, api.HeaderKnownLeader, api.HeaderLastContact)
		}
		for _, h := range want {
			if _, ok := r.Headers[h]; !ok {
				t.Errorf("%s %s does not document header %s", o.key, status, h)
			}
		}
	}
}
