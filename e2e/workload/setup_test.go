package workload

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// laggingServer acknowledges every write at once but shows it only
// after lag further requests, as a leader that answers before it commits
// (the planted early-ack bug) does: a write's ack races its commit.
type laggingServer struct {
	mu      sync.Mutex
	lag     int
	served  int
	pending []func() // applied, in order, once their request number is reached
	due     []int
	pools   map[string]api.Pool
	bundles map[string]api.BundleSpec
}

func (s *laggingServer) begin() {
	s.served++
	for len(s.due) > 0 && s.due[0] <= s.served {
		s.pending[0]()
		s.pending, s.due = s.pending[1:], s.due[1:]
	}
}

func (s *laggingServer) later(apply func()) {
	s.pending = append(s.pending, apply)
	s.due = append(s.due, s.served+s.lag)
}

func (s *laggingServer) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(api.HeaderIndex, "1")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/pools/{name}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.pools[r.PathValue("name")]
		if !ok {
			writeErr(w, http.StatusNotFound, api.CodeNotFound)
			return
		}
		reply(w, http.StatusOK, p)
	})
	mux.HandleFunc("PUT /v1/pools/{name}", func(w http.ResponseWriter, r *http.Request) {
		var p api.Pool
		_ = json.NewDecoder(r.Body).Decode(&p)
		s.later(func() { s.pools[p.Name] = p })
		reply(w, http.StatusOK, p)
	})
	mux.HandleFunc("POST /v1/bundles", func(w http.ResponseWriter, r *http.Request) {
		var spec api.BundleSpec
		_ = json.NewDecoder(r.Body).Decode(&spec)
		if _, ok := s.pools[spec.Pool]; !ok {
			writeErr(w, http.StatusUnprocessableEntity, api.CodeValidationFailed)
			return
		}
		s.later(func() { s.bundles[spec.ID] = spec })
		reply(w, http.StatusCreated, api.CreateResponse{Bundle: api.Bundle{BundleSpec: spec, ModifyIndex: 1}})
	})
	mux.HandleFunc("GET /v1/bundles/{id}", func(w http.ResponseWriter, r *http.Request) {
		spec, ok := s.bundles[r.PathValue("id")]
		if !ok {
			writeErr(w, http.StatusNotFound, api.CodeNotFound)
			return
		}
		reply(w, http.StatusOK, api.Bundle{BundleSpec: spec, ModifyIndex: 1})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.begin()
		mux.ServeHTTP(w, r)
	})
}

// TestSetupWaitsForItsWritesToShow: a cluster that acknowledges before it
// commits must not fail the setup (the register created right after the
// pool was refused, 422, before the pool showed), or a run meant to catch
// that bug in its checkers never starts.
func TestSetupWaitsForItsWritesToShow(t *testing.T) {
	s := &laggingServer{lag: 2, pools: map[string]api.Pool{}, bundles: map[string]api.BundleSpec{}}
	srv := httptest.NewServer(s.handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cfg := Config{Servers: []string{srv.URL}, Keys: 2}
	if err := Setup(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range []string{RegisterKey(0), RegisterKey(1)} {
		if _, ok := s.bundles[key]; !ok {
			t.Errorf("register %s does not show after Setup", key)
		}
	}
}
