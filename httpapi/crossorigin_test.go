package httpapi

import (
	"net/http"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestCrossOriginWrites: a browser's write on behalf of another site is 403
// and changes nothing, whatever its Content-Type; clients that are not
// browsers, same-origin requests, reads and forwarded requests pass.
func TestCrossOriginWrites(t *testing.T) {
	e := badInputEnv(t)
	host := e.hs.Listener.Addr().String()
	spec := bundle(nil)
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		refused                  bool
	}{
		{"a form's text/plain post from another site", "POST", bundles, spec,
			[]string{"Content-Type", "text/plain", "Origin", "http://evil.example"}, true},
		{"fetch marked cross-site", "POST", bundles, spec, []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"same-site is not same-origin", "POST", "/v1/nodes/n1/cordon", "", []string{"Sec-Fetch-Site", "same-site"}, true},
		{"a replace from another origin", "PUT", "/v1/pools/p9", `{"kind":"cluster"}`, []string{"Origin", "http://evil.example"}, true},
		{"no browser headers (curl, the CLI)", "POST", bundles, spec, nil, false},
		{"same origin", "POST", bundles, spec, []string{"Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}, false},
		{"a read from another site", "GET", bundles, "", []string{"Sec-Fetch-Site", "cross-site"}, false},
		{"forwarded by a follower", "POST", bundles, spec,
			[]string{"Origin", "http://follower.example", api.HeaderForwarded, "s2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := stateHash(t, e.b.State())
			resp, raw := e.do(tc.method, tc.path, []byte(tc.body), tc.hdr...)
			if !tc.refused {
				if resp.StatusCode >= 300 {
					t.Fatalf("status %d, want 2xx: %s", resp.StatusCode, raw)
				}
				return
			}
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", resp.StatusCode, raw)
			}
			if got := errorBody(t, raw); got.Code != api.CodeForbidden {
				t.Fatalf("code %q, want forbidden: %s", got.Code, raw)
			}
			if stateHash(t, e.b.State()) != before {
				t.Fatal("a refused request changed state")
			}
		})
	}
}
