package check

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// fakeServer answers GET /v1/bundles and GET /v1/operator/digest; digest
// is called with the number of digest requests so far.
func fakeServer(t *testing.T, bundles func() []api.Bundle, digest func(n int64) api.StateDigest) string {
	t.Helper()
	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/bundles", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderIndex, "7")
		_ = json.NewEncoder(w).Encode(bundles())
	})
	mux.HandleFunc("GET /v1/operator/digest", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(digest(calls.Add(1)))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestConverge(t *testing.T) {
	old := convergePoll
	convergePoll = 10 * time.Millisecond
	t.Cleanup(func() { convergePoll = old })

	placed := func() []api.Bundle {
		return []api.Bundle{{BundleSpec: api.BundleSpec{ID: "a"}, State: api.StatePlaced},
			{BundleSpec: api.BundleSpec{ID: "b"}, State: api.StateDegraded},
			{BundleSpec: api.BundleSpec{ID: "c"}, State: api.StateDeleting}}
	}
	pending := func() []api.Bundle {
		return []api.Bundle{{BundleSpec: api.BundleSpec{ID: "p"}, State: api.StatePending,
			Explain: &api.Explain{NodesEvaluated: 3, Filtered: map[string]int{"capacity": 3}}}}
	}
	same := func(int64) api.StateDigest { return api.StateDigest{Index: 10, Digest: "abc"} }
	other := func(int64) api.StateDigest { return api.StateDigest{Index: 10, Digest: "def"} }
	behind := func(int64) api.StateDigest { return api.StateDigest{Index: 9, Digest: "abc"} }
	catchesUp := func(n int64) api.StateDigest {
		if n < 3 {
			return behind(n)
		}
		return same(n)
	}
	tests := []struct {
		name    string
		bundles func() []api.Bundle
		digests []func(int64) api.StateDigest
		want    string
	}{
		{"converged", placed, []func(int64) api.StateDigest{same, same, same}, ""},
		{"follower catches up", placed, []func(int64) api.StateDigest{same, same, catchesUp}, ""},
		{"digests differ at one index", placed, []func(int64) api.StateDigest{same, same, other}, "servers differ"},
		{"follower stays behind", placed, []func(int64) api.StateDigest{same, behind, same}, "index 9"},
		{"bundle left pending", pending, []func(int64) api.StateDigest{same, same}, "capacity=3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var servers []string
			for _, d := range tc.digests {
				servers = append(servers, fakeServer(t, tc.bundles, d))
			}
			within := 2 * time.Second
			if tc.want != "" {
				within = 500 * time.Millisecond
			}
			res := Converge(t.Context(), servers, within)
			assertResult(t, res, tc.want)
		})
	}
}

func TestConvergeUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	res := Converge(t.Context(), []string{srv.URL}, 100*time.Millisecond)
	assertResult(t, res, "no server answered")
	assertResult(t, Converge(t.Context(), nil, time.Second), "no servers")
}
