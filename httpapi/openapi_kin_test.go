package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// The document is also held to a library's reading of OpenAPI 3:
// getkin/kin-openapi validates it, and its openapi3filter validates real
// answers of a test server for every operation (status, headers such as
// the index, the paging token and Retry-After, and bodies, error bodies
// included) against what the document says of that operation. What the
// hand-written tests in openapi*_test.go add is parity with the router and
// the Go types; what this adds is that no answer can drift from the spec.

var kinDoc = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(openAPIPath)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// The body types the library has no decoder for are text to it; NDJSON
// lines are checked one by one against x-amserver-line-schema below.
func init() {
	for _, ct := range []string{"text/html", "text/javascript", "text/css", "image/svg+xml", mediaNDJSON} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
}

func TestOpenAPIValidatesWithKin(t *testing.T) {
	if _, err := kinDoc(); err != nil {
		t.Fatalf("%s does not validate with kin-openapi: %v", openAPIPath, err)
	}
}

// kinCase is one request whose answer must validate; before runs first.
type kinCase struct {
	env     string // which server: see kinEnvs
	method  string
	path    string
	body    string
	headers []string
	status  int
	before  func(e *env)
	// bodyFn makes a body the case cannot spell (a snapshot), sent as an
	// octet stream.
	bodyFn func(e *env) string
}

func TestOpenAPIResponsesValidate(t *testing.T) {
	doc, err := kinDoc()
	if err != nil {
		t.Fatal(err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	envs := kinEnvs(t)
	covered := map[string][]int{} // operation → statuses validated
	for _, tc := range kinCases() {
		e := envs[tc.env]
		if tc.before != nil {
			tc.before(e)
		}
		resp, body := kinDo(t, e, tc)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d: %.300s", tc.method, tc.path, resp.StatusCode, tc.status, body)
			continue
		}
		key, err := kinValidate(router, doc, tc, resp, body)
		if err != nil {
			t.Errorf("%s %s (%d): %v", tc.method, tc.path, resp.StatusCode, err)
		}
		covered[key] = append(covered[key], resp.StatusCode)
	}
	checkKinCoverage(t, doc, covered)
}

// checkKinCoverage: every operation had a success validated, and every
// error answer of the components was seen on some operation.
func checkKinCoverage(t *testing.T, doc *openapi3.T, covered map[string][]int) {
	t.Helper()
	seen := map[int]bool{}
	for _, statuses := range covered {
		for _, s := range statuses {
			seen[s] = true
		}
	}
	delete(covered, "unrouted")
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Extensions["x-amserver-planned"] == true {
				continue
			}
			key := method + " " + path
			if !slices.ContainsFunc(covered[key], func(s int) bool { return s < 400 }) {
				t.Errorf("%s: no success answer was validated (seen %v)", key, covered[key])
			}
		}
	}
	for _, status := range []int{400, 401, 403, 404, 405, 409, 413, 422, 429, 501, 503} {
		if !seen[status] {
			t.Errorf("no %d answer was validated", status)
		}
	}
}

// kinDo sends a case and reads its answer; an event stream is read until
// a few lines arrived, then cut.
func kinDo(t *testing.T, e *env, tc kinCase) (*http.Response, []byte) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx(t), 10*time.Second)
	defer cancel()
	body, ct := tc.body, "application/json"
	if tc.bodyFn != nil {
		body, ct = tc.bodyFn(e), "application/octet-stream"
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c, tc.method, e.hs.URL+tc.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(tc.headers); i += 2 {
		req.Header.Set(tc.headers[i], tc.headers[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", tc.method, tc.path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), mediaNDJSON) {
		return resp, readLines(t, resp.Body, 3)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

func readLines(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	var out []byte
	br := bufio.NewReader(r)
	for range n {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		out = append(out, line...)
	}
	return out
}

// kinValidate validates one answer against the operation the document
// routes its request to, and returns that operation's key.
func kinValidate(router routers.Router, doc *openapi3.T, tc kinCase, resp *http.Response, body []byte) (string, error) {
	// The router matches the document's server; the request went to a
	// test server, so it is routed as if sent to the documented one.
	u, err := url.Parse(doc.Servers[0].URL + tc.path)
	if err != nil {
		return "", err
	}
	req := &http.Request{Method: tc.method, URL: u, Header: http.Header{}}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			// No operation to hold it to: the answer is still an error body.
			return "unrouted", validateErrorBody(doc, body)
		}
		return "", fmt.Errorf("the document has no operation for it: %w", err)
	}
	key := tc.method + " " + route.Path
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return key, err
	}
	return key, validateLines(doc, route, resp, body)
}

func validateErrorBody(doc *openapi3.T, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error body %q: %w", body, err)
	}
	return doc.Components.Schemas["ErrorBody"].Value.VisitJSON(v, openapi3.VisitAsResponse())
}

// validateLines checks each line of an NDJSON answer against the
// operation's x-amserver-line-schema.
func validateLines(doc *openapi3.T, route *routers.Route, resp *http.Response, body []byte) error {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), mediaNDJSON) {
		return nil
	}
	media := route.Operation.Responses.Status(resp.StatusCode).Value.Content.Get(mediaNDJSON)
	ref, _ := media.Extensions["x-amserver-line-schema"].(map[string]any)["$ref"].(string)
	schema := doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
	if schema == nil {
		return fmt.Errorf("no line schema %q", ref)
	}
	for line := range bytes.Lines(body) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue // a keep-alive
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("line %q: %w", line, err)
		}
		if err := schema.Value.VisitJSON(v, openapi3.VisitAsResponse()); err != nil {
			return fmt.Errorf("line %q: %w", line, err)
		}
	}
	return nil
}

// kinUI stands in for ui.Handler with its content types: the page, a
// script, and the API's error body for anything else.
var kinUI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html>"))
	case "/app.js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write([]byte("export {};"))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"notFound","message":"no such file","errors":[],"warnings":[]}}`))
	}
})

// kinEnvs are the servers the cases run against: a seeded leader (with the
// UI, metrics and a planner), one with ACLs on, one that knows no leader,
// and one whose expensive-request slots are all taken.
func kinEnvs(t *testing.T) map[string]*env {
	t.Helper()
	lead := badInputEnv(t, func(c *Config) { c.UI = kinUI })
	fw := newFakeWorker(t)
	lead.b.set(func(b *testBackend) {
		b.members = []gossip.Member{reporting("s1", gossip.StatusAlive), workerMember("n1", fw.hs.URL, gossip.StatusAlive)}
	})
	lead.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: gkey(1)})
	noLeader := newEnv(t, newTestBackend("s3"), withTestUI)
	noLeader.b.setNoLeader()
	busy, _, planned := busyEnv(t, 1, 1)
	hold(t, busy, "holder", planned)
	acl, _ := aclEnv(t)
	return map[string]*env{"": lead, "acl": acl, "noLeader": noLeader, "busy": busy}
}
