package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
)

// busyEnv is a leader whose dry-run plans hold their slot until release
// is closed; planned counts the plans under way.
func busyEnv(t *testing.T, total, perCaller int) (e *env, release chan struct{}, planned *atomic.Int64) {
	t.Helper()
	b := newTestBackend("s1")
	e = newEnv(t, b, func(c *Config) {
		c.MaxExpensive, c.MaxExpensivePerCaller, c.QueueWait = total, perCaller, 100*time.Millisecond
	})
	b.setLeader(e.hs.URL)
	seedCluster(t, b)
	release, planned = make(chan struct{}), &atomic.Int64{}
	t.Cleanup(func() { close(release) })
	b.set(func(b *testBackend) {
		b.plan = func(fsm.BundleSpec) (PlanResult, error) {
			planned.Add(1)
			<-release
			return PlanResult{}, nil
		}
	})
	return e, release, planned
}

// hold starts a plan as caller (a token) that keeps its slot.
func hold(t *testing.T, e *env, token string, planned *atomic.Int64) {
	t.Helper()
	before := planned.Load()
	go func() {
		_, _ = e.do("POST", "/v1/bundles/plan", mustJSONNoT(validSpec("x")), api.HeaderToken, token)
	}()
	poll.Eventually(t, 10*time.Second, "the plan to hold its slot", func() error {
		return poll.Check(planned.Load() > before, "no plan under way")
	})
}

// TestExpensiveLimits: past the per-server or per-caller bound an
// expensive request waits, then gets 429 tooManyRequests with
// Retry-After; cheap routes (health, reads by id, writes) are never held.
func TestExpensiveLimits(t *testing.T) {
	tests := []struct {
		name             string
		total, perCaller int
		held             []string // tokens holding a slot
		caller           string
		want             int
	}{
		{"free", 2, 1, nil, "a", http.StatusOK},
		{"caller at its bound", 2, 1, []string{"a"}, "a", http.StatusTooManyRequests},
		{"another caller fits", 2, 1, []string{"a"}, "b", http.StatusOK},
		{"server at its bound", 2, 2, []string{"a", "b"}, "c", http.StatusTooManyRequests},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _, planned := busyEnv(t, tc.total, tc.perCaller)
			for _, tok := range tc.held {
				hold(t, e, tok, planned)
			}
			resp, raw := e.do("GET", "/v1/bundles", nil, api.HeaderToken, tc.caller)
			if resp.StatusCode != tc.want {
				t.Fatalf("list: %d %s, want %d", resp.StatusCode, raw, tc.want)
			}
			if tc.want == http.StatusTooManyRequests {
				if got := errorBody(t, raw); got.Code != api.CodeTooManyRequests || resp.Header.Get("Retry-After") == "" {
					t.Fatalf("429 without its code or Retry-After: %v %s", resp.Header, raw)
				}
			}
			for _, path := range []string{"/v1/health", "/v1/status/leader", "/v1/nodes/n1", "/v1/pools/p1"} {
				if resp, raw := e.do("GET", path, nil, api.HeaderToken, tc.caller); resp.StatusCode != http.StatusOK {
					t.Errorf("%s while saturated: %d %s", path, resp.StatusCode, raw)
				}
			}
			if resp, raw := e.do("POST", "/v1/nodes/n1/cordon", nil, api.HeaderToken, tc.caller); resp.StatusCode != http.StatusOK {
				t.Errorf("a write while saturated: %d %s", resp.StatusCode, raw)
			}
		})
	}
}

// TestLimiterReleases: every slot handed out comes back, whether its
// holder finishes, gives up waiting or its client leaves.
func TestLimiterReleases(t *testing.T) {
	l := newLimiter(1, 1, 20*time.Millisecond)
	release, err := l.acquire(context.Background(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.acquire(context.Background(), "a", false); !isTooMany(err) {
		t.Fatalf("same caller over its bound: %v", err)
	}
	if _, err := l.acquire(context.Background(), "b", false); !isTooMany(err) {
		t.Fatalf("over the server's bound: %v", err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.acquire(gone, "b", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("a client gone: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		r, err := l.acquire(context.Background(), "b", true) // patient: waits for a's slot
		if err != nil {
			t.Error(err)
			return
		}
		r()
	})
	release()
	wg.Wait()
	if l.waiting != 0 || len(l.callers) != 0 || len(l.slots) != 0 {
		t.Fatalf("limiter not back to idle: waiting %d, callers %v, slots %d", l.waiting, l.callers, len(l.slots))
	}
}

func isTooMany(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.code == api.CodeTooManyRequests
}

// TestSharedAnswers: requests for the same thing at the same index share
// one computation; another index, an expired answer or a failed
// computation are computed again.
func TestSharedAnswers(t *testing.T) {
	s := newSharedAnswers()
	var computed atomic.Int64
	gate := make(chan struct{})
	slow := func() (answer, error) {
		computed.Add(1)
		<-gate
		return answer{body: []byte("x")}, nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			a, done, err := s.get(context.Background(), "k", 7, slow)
			if err != nil || string(a.body) != "x" {
				t.Errorf("shared answer %q, %v", a.body, err)
			}
			done()
		})
	}
	poll.Eventually(t, 10*time.Second, "the first computation", func() error {
		return poll.Check(computed.Load() == 1, "%d computations", computed.Load())
	})
	close(gate)
	wg.Wait()
	fast := func() (answer, error) { computed.Add(1); return answer{body: []byte("y")}, nil }
	fail := func() (answer, error) { computed.Add(1); return answer{}, errors.New("no") }
	steps := []struct {
		key   string
		index uint64
		fn    func() (answer, error)
		want  int64 // computations so far
	}{
		{"k", 7, fast, 1}, // within the TTL: shared
		{"k", 8, fast, 2}, // a new index
		{"j", 8, fail, 3}, // failures are not kept
		{"j", 8, fast, 4}, // so the next computes
		{"j", 8, fast, 4}, // and is then shared
	}
	for i, st := range steps {
		_, done, _ := s.get(context.Background(), st.key, st.index, st.fn)
		done()
		if got := computed.Load(); got != st.want {
			t.Fatalf("step %d: %d computations, want %d", i, got, st.want)
		}
	}
	s.entries["j"].at = time.Now().Add(-2 * sharedTTL)
	_, done, _ := s.get(context.Background(), "j", 8, fast)
	done()
	if computed.Load() != 5 {
		t.Fatal("an expired answer was reused")
	}
}

// TestListStopsWhenClientLeaves: building a page checks the request's
// context, so the work ends with the client.
func TestListStopsWhenClientLeaves(t *testing.T) {
	e := listEnv(t, bundleIDs(600))
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	p := listParams{perPage: api.MaxPerPage, maxScan: defaultMaxScan}
	keep := func(*fsm.Bundle) bool { return true }
	_, err := bundleListing.page(gone, e.b.State(), p, keep, bundleListing.render(e.s, e.b.State()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("page for a client gone: %v", err)
	}
}

// TestSharedAnswersExpire: a read drops every kept answer whose time is
// up, whatever its key, and their bytes with them.
func TestSharedAnswersExpire(t *testing.T) {
	s := newSharedAnswers()
	get := func(key string) {
		t.Helper()
		_, done, err := s.get(t.Context(), key, 1, func() (answer, error) { return answer{body: []byte(key)}, nil })
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	for _, key := range []string{"a", "bb", "ccc"} {
		get(key)
	}
	if s.bytes != 6 || len(s.kept)-s.head != 3 {
		t.Fatalf("%d bytes, %d kept; want 6 and 3", s.bytes, len(s.kept)-s.head)
	}
	for _, k := range s.kept[s.head : s.head+2] { // a and bb are a TTL old
		k.e.at = time.Now().Add(-2 * sharedTTL)
	}
	get("dddd")
	if _, ok := s.entries["ccc"]; len(s.entries) != 2 || !ok || s.bytes != 7 || len(s.kept)-s.head != 2 {
		t.Fatalf("after expiry: %d entries, %d bytes, %d kept; want ccc and dddd, 7 bytes", len(s.entries), s.bytes, len(s.kept)-s.head)
	}
}
