package httpapi

import (
	"archive/tar"
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
)

// fuzzServer is a leader over a seeded FSM, driven without a network.
func fuzzServer(t testing.TB) (*Server, *testBackend) {
	b := newTestBackend("s1")
	seedCluster(t, b)
	placeBundle(t, b, "b1")
	archive := composeArchive(1)
	b.mustApply(t, fsm.PutTemplateType, fsm.PutTemplateRequest{Name: "web", Digest: artifact.Digest(archive),
		Runtime: "compose", Files: 2, Archive: archive})
	return New(Config{Backend: b, Exprs: exprChecker{}}), b
}

// fuzzRequest sends body to method path and checks the invariants: no
// panic reaches the client, no 5xx (a leader never answers 503 here either),
// and a 4xx leaves the state exactly as it was.
func fuzzRequest(t *testing.T, s *Server, b *testBackend, method, path string, body []byte) {
	before := stateHash(t, b.State())
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	s.Handler().ServeHTTP(rec, req)
	switch {
	case rec.Code >= 500:
		t.Fatalf("%s %s answered %d: %s", method, path, rec.Code, rec.Body.Bytes())
	case rec.Code >= 400:
		if stateHash(t, b.State()) != before {
			t.Fatalf("%s %s answered %d but changed state", method, path, rec.Code)
		}
	}
}

func FuzzBundleJSON(f *testing.F) {
	for _, seed := range []string{
		bundle(nil), bundle(func(s *api.BundleSpec) { s.ID = "b1" }), `{"pool":"p1","jobs":[{"name":"a"}]}`,
		`{"pool":"p1","jobs":[{"name":"a","requirements":{"capacity":-1e308,"cores":9999999999}}]}`,
		`{"pool":"p1","startAt":"2262-04-11T23:47:16.854775807Z","jobs":[{"name":"a"}]}`,
		`{"pool":"p1","jobs":[{"name":"a","coLocateWith":["a","b"],"constraints":["!!"]}]}`,
		`{"id":"","pool":"","jobs":null}`, `null`, `[]`, `{"pool":"p1"}{}`, `{`, ``,
		// The launch union, the older shape, mixed shapes, reserved tags, runtimes.
		`{"pool":"p1","jobs":[{"name":"a","launch":{"kind":"productTemplate","ref":"web","parameters":{"PORT":"80","9x":"y"},"tags":{"__a":"1","b":"2"},"startDateTime":"2030-01-01T00:00:00Z","stopDateTime":"2029-01-01T00:00:00Z"}}]}`,
		`{"pool":"p1","jobs":[{"name":"a","launch":{"kind":"productTemplate","ref":"web@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}]}`,
		`{"pool":"p1","jobs":[{"name":"a","launch":{"kind":"legacy","job":{"driver":"docker","image":"x","command":["y"],"env":{"A":"1"}}}}]}`,
		`{"pool":"p1","jobs":[{"name":"a","launch":{"driver":"exec","command":["/bin/x"],"env":{"A":"1"}}}]}`,
		`{"pool":"p1","jobs":[{"name":"a","launch":{"kind":"productTemplate","ref":"ghost","driver":"exec","job":{}}}]}`,
		`{"pool":"p1","tags":{"__x":"1"},"jobs":[{"name":"a","runtime":{"oneOf":["WASMTIME","container","jvm"]}}]}`,
		`{"pool":"p1","jobs":[{"name":"a","runtime":{"oneOf":[]},"launch":{"kind":"vm"}}]}`,
		`{"pool":"p1","pool":"p1","jobs":[{"name":"a"}]}`, `{"pool":"p1","jobs":[{"name":"a","launch":{"env":{"A":"1","A":"2"}}}]}`,
		`{"pool":"p1","tags":{"k":"\u202e"},"jobs":[{"name":"a"}]}`, "{\"pool\":\"p1\",\"tags\":{\"k\":\"\xff\"},\"jobs\":[{\"name\":\"a\"}]}",
	} {
		f.Add([]byte(seed))
	}
	s, b := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzRequest(t, s, b, http.MethodPost, "/v1/bundles", body)
		fuzzRequest(t, s, b, http.MethodPost, "/v1/bundles/validate", body)
	})
}

func FuzzNodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"pool":"p1","totalCapacity":4,"totalCores":2}`,
		`{"pool":"p1","totalCapacity":4,"utilizationCap":0.5,"gpus":[{"index":0,"model":"a10","totalCapacity":1}],"capabilities":[{"name":"nic","count":1}]}`,
		`{"pool":"p2","totalCapacity":1e-9}`, `{"pool":"p1","totalCapacity":4,"gpus":[{"index":-1,"totalCapacity":1}]}`,
		`{"pool":"p1","totalCapacity":1,"labels":{"":"x"}}`, `{"id":"n1","pool":"p1"}`, `{}`, `{"pool":`,
		`{"pool":"p1","totalCapacity":4,"runtimes":["exec","Compose","wasmtime"],"kind":""}`,
		`{"pool":"p1","totalCapacity":4,"runtimes":["pve-vm","pve-ct"],"kind":"proxmox"}`,
		`{"pool":"p1","totalCapacity":4,"runtimes":["pve-vm","jvm"],"kind":"esx"}`,
	} {
		f.Add([]byte(seed))
	}
	s, b := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzRequest(t, s, b, http.MethodPut, "/v1/nodes/n9", body)
		fuzzRequest(t, s, b, http.MethodPut, "/v1/nodes/n1", body)
	})
}

func FuzzPoolJSON(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"cluster"}`, `{"kind":"elastic","instanceTypes":[{"name":"s","totalCapacity":2}],"provisioner":{"url":"http://x"}}`,
		`{"caps":{"maxCapacity":0.1,"maxCores":1}}`, `{"tiers":[{"name":"a","cloud":""}]}`,
		`{"idleTimeout":"-1s"}`, `{"minNodes":3,"maxNodes":1}`, `{"name":"other"}`, `{"usage":{"capacity":5}}`,
		`{"kind":"elastic","instanceTypes":[{"name":"w","totalCapacity":2,"runtimes":["wasm","docker"],"kind":"proxmox"}]}`,
	} {
		f.Add([]byte(seed))
	}
	s, b := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzRequest(t, s, b, http.MethodPut, "/v1/pools/p9", body)
		fuzzRequest(t, s, b, http.MethodPut, "/v1/pools/p1", body)
	})
}

// bodyRoutes are the JSON-body routes the other targets do not cover; the
// fuzzer picks one with its first input.
var bodyRoutes = []struct{ method, path string }{
	{http.MethodPut, "/v1/bundles/b1"},
	{http.MethodPut, "/v1/bundles/b1?cas=1"},
	{http.MethodPut, "/v1/services/svc1"},
	{http.MethodPut, "/v1/nodes/n1/assignments/b1%3A0%3Aenc%40n1/status"},
	{http.MethodPost, "/v1/operator/raft/transfer-leadership"},
	{http.MethodPost, "/v1/acl/tokens"},
	{http.MethodPost, "/v1/operator/keyring"},
}

func FuzzOtherBodies(f *testing.F) {
	for i, seed := range []string{
		bundle(func(s *api.BundleSpec) { s.ID = "b1" }), bundle(func(s *api.BundleSpec) { s.ID = "b1" }),
		`{"pools":["p1"],"launch":{"driver":"none"},"requirements":{"capacity":0.5}}`,
		`{"state":"running","message":"ok"}`, `{"id":"s2"}`,
		`{"kind":"worker","nodeId":"n1","secretId":"0123456789abcdef"}`,
		`{"op":"install","key":"T9L6mX1xk7n3+4fY0lC0xq0YQ2vL9o0hJgk7s3Q7WmE="}`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	for _, seed := range []string{`{"kind":"root"}`, `{"state":"exploded"}`, `{"id":1}`, `null`, `{`, ``} {
		f.Add(uint8(len(seed)), []byte(seed))
	}
	s, b := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := bodyRoutes[int(route)%len(bodyRoutes)]
		fuzzRequest(t, s, b, r.method, r.path, body)
	})
}

// FuzzTemplateArchive: whatever bytes are pushed as a template, the API
// answers 2xx or 4xx with a code, and a refusal changes nothing.
func FuzzTemplateArchive(f *testing.F) {
	compose := entry{name: "compose.yaml", body: "services:\n  a:\n    image: x\n"}
	for _, seed := range [][]byte{
		composeArchive(2), gzipped(composeArchive(3)), wasmArchive(),
		tarBytes(compose, entry{name: "../x", body: "x"}),
		tarBytes(compose, entry{name: "etc", typ: tar.TypeSymlink, link: "/etc"}),
		tarBytes(compose, entry{name: "l", typ: tar.TypeLink, link: "compose.yaml"}),
		tarBytes(compose, entry{name: "d/", typ: tar.TypeDir}, entry{name: "d/f", body: "x"}),
		tarBytes(entry{name: "compose.yaml", body: "services: ["}),
		tarBytes(compose, entry{name: "main.wasm", body: "x"}),
		tarBytes(entry{name: "README"}), gzipped([]byte("not a tar")), {0x1f, 0x8b}, nil,
	} {
		f.Add(seed)
	}
	s, b := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzRequest(t, s, b, http.MethodPut, "/v1/templates/t9", body)
	})
}
