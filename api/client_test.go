package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewAddress(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"127.0.0.1:7070", "http://127.0.0.1:7070"},
		{"localhost:7070", "http://localhost:7070"},
		{"http://10.0.0.1:7070/", "http://10.0.0.1:7070"},
		{"https://amserver.example", "https://amserver.example"},
		{"https://proxy.example/amserver/", "https://proxy.example/amserver"},
	} {
		c, err := New(tc.in)
		if err != nil || c.Address() != tc.want {
			t.Errorf("New(%q) = %v, %v; want %s", tc.in, c, err, tc.want)
		}
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://127.0.0.1:7070/v1", "127.0.0.1:7070/v1/", "https://proxy.example/amserver/v1"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

// script answers each request with the next canned response.
type script struct {
	t        *testing.T
	answers  []func(w http.ResponseWriter, r *http.Request)
	requests atomic.Int64
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(s.requests.Add(1)) - 1
	if i >= len(s.answers) {
		s.t.Errorf("unexpected request %d: %s %s", i, r.Method, r.URL)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	s.answers[i](w, r)
}

func noLeader(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Retry-After", "0")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"error":{"code":"noLeader","message":"no leader","errors":[],"warnings":[]}}`)
}

func jsonAnswer(status int, body string, hdr ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func serve(t *testing.T, answers ...func(http.ResponseWriter, *http.Request)) (*Client, *script) {
	t.Helper()
	s := &script{t: t, answers: answers}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	c, err := New(hs.URL, WithToken("secret"))
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func TestRetryOnNoLeaderForIdempotentRequests(t *testing.T) {
	c, s := serve(t, noLeader, noLeader,
		jsonAnswer(200, `[{"name":"p1","caps":{},"defaults":{},"usage":{}}]`,
			HeaderIndex, "42", HeaderKnownLeader, "true", HeaderLastContact, "15"))
	pools, meta, err := c.Pools(context.Background(), &QueryOptions{Stale: true})
	if err != nil || len(pools) != 1 || pools[0].Name != "p1" || s.requests.Load() != 3 {
		t.Fatalf("pools = %+v, %v after %d requests", pools, err, s.requests.Load())
	}
	if meta != (QueryMeta{Index: 42, KnownLeader: true, LastContact: 15 * time.Millisecond}) {
		t.Fatalf("meta = %+v", meta)
	}
}

func TestNoRetryForNonIdempotentOrUnknownOutcome(t *testing.T) {
	c, s := serve(t, noLeader)
	if err := c.TransferLeadership(context.Background(), "s2"); !IsCode(err, CodeNoLeader) || s.requests.Load() != 1 {
		t.Fatalf("transfer = %v after %d requests", err, s.requests.Load())
	}
	unknown := jsonAnswer(503, `{"error":{"code":"outcomeUnknown","message":"m","errors":[],"warnings":[]}}`)
	c, s = serve(t, unknown)
	_, err := c.PutPool(context.Background(), Pool{Name: "p"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeOutcomeUnknown || e.Status != 503 || s.requests.Load() != 1 {
		t.Fatalf("outcome unknown = %v after %d requests", err, s.requests.Load())
	}
}

// A retried create resends the same id the client generated.
func TestCreateBundleGeneratesIDOnce(t *testing.T) {
	var ids []string
	record := func(next func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			var spec BundleSpec
			if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
				t.Error(err)
			}
			if r.Header.Get(HeaderToken) != "secret" {
				t.Error("token not sent")
			}
			ids = append(ids, spec.ID)
			next(w, r)
		}
	}
	c, _ := serve(t, record(noLeader), record(jsonAnswer(201, `{"bundle":{"id":"x","state":"pending"},"warnings":[]}`)))
	res, err := c.CreateBundle(context.Background(), BundleSpec{Pool: "p1"})
	if err != nil || !res.Created || len(ids) != 2 || ids[0] != ids[1] || len(ids[0]) != IDLength {
		t.Fatalf("create = %+v, %v, ids %v", res, err, ids)
	}
}

func TestErrorDecoding(t *testing.T) {
	c, _ := serve(t,
		jsonAnswer(422, `{"error":{"code":"validationFailed","message":"bad","errors":[{"code":"emptyPoolList","message":"pool is required"}],"warnings":[]}}`),
		jsonAnswer(502, `<html>bad gateway</html>`))
	_, err := c.ValidateBundle(context.Background(), BundleSpec{})
	var e *Error
	if !errors.As(err, &e) || e.Status != 422 || e.Code != CodeValidationFailed || e.Errors[0].Code != FindingEmptyPoolList ||
		!strings.Contains(err.Error(), "emptyPoolList") {
		t.Fatalf("422 = %#v", err)
	}
	_, _, err = c.Bundle(context.Background(), "b1", nil)
	if !errors.As(err, &e) || e.Status != 502 || e.Code != CodeInternal || !strings.Contains(e.Message, "bad gateway") {
		t.Fatalf("502 = %#v", err)
	}
}

func TestEventsSkipsKeepAlives(t *testing.T) {
	c, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("index") != "7" {
			t.Errorf("index = %q", r.URL.Query().Get("index"))
		}
		_, _ = io.WriteString(w, "{\"index\":8,\"type\":\"bundleCreated\",\"message\":\"a\"}\n\n{\"index\":9,\"type\":\"healed\",\"message\":\"b\"}\n")
	})
	var got []uint64
	err := c.Events(context.Background(), 7, func(ev Event) error { got = append(got, ev.Index); return nil })
	if err != nil || len(got) != 2 || got[0] != 8 || got[1] != 9 {
		t.Fatalf("events = %v, %v", got, err)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{{"", time.Second}, {"2", 2 * time.Second}, {"0", 50 * time.Millisecond}, {"9999", 30 * time.Second}, {"soon", time.Second}} {
		h := http.Header{}
		h.Set("Retry-After", tc.v)
		if got := retryAfter(h); got != tc.want {
			t.Errorf("Retry-After %q = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// Retries during an election stay at most 100 ms apart (a client sees the
// new leader soon after it is elected) yet span several seconds.
func TestRetryDelay(t *testing.T) {
	var total time.Duration
	for attempt := range DefaultMaxRetries {
		d := retryDelay(attempt)
		lo, hi := 75*time.Millisecond, 100*time.Millisecond
		if attempt < 2 {
			lo, hi = 18*time.Millisecond, 50*time.Millisecond
		}
		if d < lo || d > hi {
			t.Fatalf("retry %d waits %v, want %v–%v", attempt, d, lo, hi)
		}
		total += d
	}
	if total < 3*time.Second {
		t.Fatalf("all %d retries span only %v; an election can take a few seconds", DefaultMaxRetries, total)
	}
}

func TestNewIDIsAValidName(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if len(id) != IDLength || strings.Trim(id, idAlphabet) != "" || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

// A deadline that ends a retry while its request is in flight reports why
// the client was retrying, as one that ends the pause between attempts
// does: the caller must not read a server that never answered as a quiet
// end (a follow of the events that watched nothing would exit 0).
func TestDeadlineDuringRetryReportsWhyItRetried(t *testing.T) {
	hang := func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	c, s := serve(t, noLeader, hang)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := c.Events(ctx, 0, func(Event) error { return nil })
	if !IsCode(err, CodeNoLeader) || s.requests.Load() != 2 {
		t.Fatalf("events = %v after %d requests; want the no-leader answer after the second request", err, s.requests.Load())
	}
}
