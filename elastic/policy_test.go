package elastic

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

// TestPolicyProblem: only http(s) URLs on the allow-list, and commands
// only with consent.
func TestPolicyProblem(t *testing.T) {
	allow := Policy{AllowHosts: []string{"prov.example.com", "*.cloud.example", "10.0.0.5:8080", "192.168.7.0/24"}}
	cases := []struct {
		url, want string // want: a fragment of the problem; "" for none
	}{
		{"https://prov.example.com/nodes", ""},
		{"http://api.cloud.example/x", ""},
		{"http://10.0.0.5:8080/", ""},
		{"http://10.0.0.5:9090/", "not on these servers' --provisioner-allow"},
		{"http://192.168.7.44/", ""},
		{"http://evil.example.com/", "not on these servers' --provisioner-allow"},
		{"http://169.254.169.254/latest/meta-data", "not on these servers' --provisioner-allow"},
		{"file:///etc/passwd", "not an absolute URL"},
		{"gopher://prov.example.com/", `scheme "gopher"`},
		{"https://user:pw@prov.example.com/", "credentials"},
		{"/relative", "not an absolute URL"},
	}
	for _, tc := range cases {
		got := allow.Problem(&fsm.Provisioner{URL: tc.url})
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problem %q, want %q", tc.url, got, tc.want)
		}
	}
	if got := (Policy{}).Problem(&fsm.Provisioner{URL: "https://prov.example.com/"}); got == "" {
		t.Error("a webhook was allowed without any --provisioner-allow")
	}
}

// TestWebhookDialGuard: a name that resolves to loopback is refused at the
// dial unless an IP or CIDR lists it; a listed one is called.
func TestWebhookDialGuard(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	req := provisionRequest(ProvisionCreate, sampleSpawn(), nil, nil)

	byName := Policy{AllowHosts: []string{"localhost"}}
	p := newProvisioner(&fsm.Provisioner{URL: "http://localhost:" + port + "/nodes"}, byName.client(time.Second), byName)
	if err := p.Create(t.Context(), req); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("a name resolving to loopback: %v", err)
	}
	byIP := Policy{AllowHosts: []string{"127.0.0.1"}}
	p = newProvisioner(&fsm.Provisioner{URL: srv.URL + "/nodes"}, byIP.client(time.Second), byIP)
	if err := p.Create(t.Context(), req); err != nil {
		t.Fatalf("a listed loopback address: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d calls reached the server, want 1", calls.Load())
	}
}

// TestWebhookRedirectAndBody: a redirect is a failure, not followed, and
// no answer body reaches the error (which the leader logs).
func TestWebhookRedirectAndBody(t *testing.T) {
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Redirect(w, r, target.URL+"/internal", http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "SECRET-INTERNAL-ANSWER")
	}))
	defer srv.Close()
	pol := Policy{AllowHosts: []string{"127.0.0.1"}}
	p := newProvisioner(&fsm.Provisioner{URL: srv.URL}, pol.client(time.Second), pol)
	err := p.Create(t.Context(), provisionRequest(ProvisionCreate, sampleSpawn(), nil, nil))
	if err == nil || !errors.Is(err, errPermanent) || followed.Load() {
		t.Fatalf("redirect: err %v, followed %v", err, followed.Load())
	}
	err = p.Delete(t.Context(), provisionRequest(ProvisionDelete, sampleSpawn(), nil, nil))
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("error answer: %v", err)
	}
}

// TestCallsGiveUp: a call that keeps failing stops after MaxAttempts and is
// reported as failed; a call that succeeds is not.
func TestCallsGiveUp(t *testing.T) {
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		attempts.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	pol := Policy{AllowHosts: []string{"127.0.0.1"}}
	c := NewCalls(t.Context(), slog.New(slog.DiscardHandler), Config{
		Policy: pol, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond, MaxAttempts: 3, CallTimeout: time.Second,
	})
	sp := sampleSpawn()
	c.Create(sp, &fsm.Provisioner{URL: srv.URL}, nil, nil, func() bool { return true })
	select {
	case <-c.Kick():
	case <-time.After(10 * time.Second):
		t.Fatal("the failing call neither gave up nor kicked the duty")
	}
	c.Wait()
	why, failed := c.Failed(ProvisionCreate, sp.ID)
	if !failed || !strings.Contains(why, "503") || attempts.Load() != 3 {
		t.Fatalf("failed %v (%q) after %d attempts, want 3 attempts and a 503", failed, why, attempts.Load())
	}
	c.Create(sp, &fsm.Provisioner{URL: srv.URL}, nil, nil, func() bool { return true })
	c.Wait()
	if attempts.Load() != 3 {
		t.Fatal("a given-up call started again in the same term")
	}
}
