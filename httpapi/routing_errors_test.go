package httpapi

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestRoutingErrors: a path no route takes and a method a path does not
// take say so with the request's method and path (and the methods the path
// takes), not echo's bare "Not Found" and "Method Not Allowed".
func TestRoutingErrors(t *testing.T) {
	e := badInputEnv(t)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
		want         []string
	}{
		{"GET", "/v1/nosuch", 404, api.CodeNotFound, []string{`no route for "GET" "/v1/nosuch"`}},
		{"GET", "/v1/v1/bundles/b1", 404, api.CodeNotFound, []string{`"/v1/v1/bundles/b1"`}},
		{"PATCH", "/v1/bundles/b1", 405, api.CodeBadRequest,
			[]string{`method "PATCH" is not allowed on "/v1/bundles/b1"`, "GET", "PUT", "DELETE"}},
		{"DELETE", "/v1/bundles", 405, api.CodeBadRequest, []string{`method "DELETE"`, "GET", "POST"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, raw := e.do(tc.method, tc.path, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			got := errorBody(t, raw)
			if got.Code != tc.code {
				t.Fatalf("code %q, want %q", got.Code, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Message, w) {
					t.Errorf("message %q lacks %q", got.Message, w)
				}
			}
		})
	}
}

// TestBodyTooLargeNamesTheLimit: a 413 says which limit the body passed,
// the default one or the template push's own.
func TestBodyTooLargeNamesTheLimit(t *testing.T) {
	e := badInputEnv(t)
	for _, tc := range []struct{ method, path, want string }{
		{"POST", bundles, "(1MiB)"},
		{"PUT", "/v1/templates/web2", "(4MiB)"},
	} {
		resp, raw := e.do(tc.method, tc.path, []byte(strings.Repeat("a", 5<<20)))
		if resp.StatusCode != 413 {
			t.Fatalf("%s %s: status %d, want 413: %s", tc.method, tc.path, resp.StatusCode, raw)
		}
		if got := errorBody(t, raw); got.Code != api.CodeBodyTooLarge || !strings.Contains(got.Message, tc.want) {
			t.Errorf("%s %s: %s %q, want the limit %s named", tc.method, tc.path, got.Code, got.Message, tc.want)
		}
	}
}
