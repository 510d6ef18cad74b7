package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/logrec"
	"github.com/amserver/amserver/internal/poll"
)

var (
	shrunk    = &api.Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: "new inventory of node w2 is below what is reserved"}
	movedPool = &api.Error{Status: http.StatusConflict, Code: api.CodeInUse, Message: "node w2 holds reservations in pool default"}
	forbidden = &api.Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: "token may not write nodes"}
	noLeader  = &api.Error{Status: http.StatusServiceUnavailable, Code: api.CodeNoLeader, Message: "no leader"}
	busy      = &api.Error{Status: http.StatusTooManyRequests, Code: api.CodeTooManyRequests, Message: "busy"}
	unknown   = &api.Error{Code: api.CodeOutcomeUnknown, Message: "connection broke"}
	errNet    = errors.New("dial tcp 127.0.0.1:7070: connection refused")
)

// TestRegistrationRefusalIsLoud: a registration the servers refuse (a 409,
// a 4xx) leaves the node running nothing, so it is an Error naming the
// server's answer and the fix, again every refusalRepeat while it lasts
// (not on each retry, 5 s apart) and at once when the refusal changes; a
// success ends it and says so. A transient failure is no Error.
func TestRegistrationRefusalIsLoud(t *testing.T) {
	ok := error(nil)
	for _, tc := range []struct {
		name   string
		tries  []error // one every 5 s
		errors []string
		infos  int // successes logged
	}{
		{"a shrunk inventory, for 2 minutes", repeat(shrunk, 25),
			[]string{"at 0s: below what is reserved", "at 60s: below what is reserved", "at 120s: below what is reserved"}, 0},
		{"the refusal changes", []error{shrunk, shrunk, movedPool, movedPool},
			[]string{"at 0s: below what is reserved", "at 10s: holds reservations in pool default"}, 0},
		{"a success ends a refusal", []error{shrunk, shrunk, ok, shrunk},
			[]string{"at 0s: below what is reserved", "at 15s: below what is reserved"}, 1},
		{"a forbidden token", []error{forbidden, forbidden}, []string{"at 0s: may not write nodes"}, 0},
		{"transient failures", []error{noLeader, busy, unknown, errNet, noLeader, ok}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &logrec.Recorder{}
			start := time.Unix(1_000_000, 0)
			now := start
			reg := &registrationLog{logger: slog.New(h), now: func() time.Time { return now }}
			var got []string
			for i, err := range tc.tries {
				now = start.Add(time.Duration(i) * 5 * time.Second)
				before := len(h.At(slog.LevelError))
				if err == nil {
					reg.registered("s1")
					continue
				}
				if _, refusal := refusal(err); reg.refused(err) != refusal {
					t.Errorf("try %d (%v): refused() disagrees with refusal()", i, err)
				}
				for _, line := range h.At(slog.LevelError)[before:] {
					got = append(got, fmt.Sprintf("at %ds: %s", i*5, line))
				}
			}
			if len(got) != len(tc.errors) {
				t.Fatalf("errors logged:\n%s\nwant %d: %v", strings.Join(got, "\n"), len(tc.errors), tc.errors)
			}
			for i, want := range tc.errors {
				at, msg, _ := strings.Cut(want, ": ")
				if !strings.HasPrefix(got[i], at+": ") || !strings.Contains(got[i], msg) || !strings.Contains(got[i], "fix=") {
					t.Errorf("error %d: %s\nwant %s, with the server's message and a fix", i, got[i], want)
				}
			}
			if n := len(h.At(slog.LevelInfo)); n != tc.infos {
				t.Errorf("%d successes logged, want %d", n, tc.infos)
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// TestRunSaysRegistrationIsRefused: the black-box case. A worker restarted
// with less inventory than its node holds is refused with a 409; it must
// say so at Error level with what to do, and it polls no assignments while
// unregistered (its node runs nothing, which is why it must be loud).
func TestRunSaysRegistrationIsRefused(t *testing.T) {
	var mu sync.Mutex
	var polls int
	var accept atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/v1/nodes/w2" && !accept.Load() {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusConflict)
			fmt.Fprintf(rw, `{"error":{"code":%q,"message":%q}}`, shrunk.Code, shrunk.Message)
			return
		}
		if r.Method == http.MethodPut {
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprint(rw, `{"id":"w2"}`)
			return
		}
		mu.Lock()
		polls++
		mu.Unlock()
		http.NotFound(rw, r)
	}))
	t.Cleanup(srv.Close) // after the worker stops (cleanups run last first)
	w, h := runAgainst(t, srv.URL, "w2", 0.1)
	poll.Eventually(t, 10*time.Second, "an Error saying registration is refused", func() error {
		errs := h.At(slog.LevelError)
		return poll.Check(len(errs) == 1 && strings.Contains(errs[0], shrunk.Message) && strings.Contains(errs[0], "amserver node drain w2"),
			"errors logged: %q", errs)
	})
	mu.Lock()
	if polls != 0 {
		t.Fatalf("%d other requests while unregistered, want none", polls)
	}
	mu.Unlock()
	// Gossip says so too, for the leader to keep work off the node; a
	// registration that goes through takes the word back.
	refusedTag := func() string {
		m, _ := w.gossip.Member("w2")
		return m.Meta.Tags[gossip.TagRegistration]
	}
	poll.Eventually(t, 10*time.Second, "the refusal tag in gossip", func() error {
		return poll.Check(refusedTag() == gossip.RegistrationRefused, "tag %q", refusedTag())
	})
	accept.Store(true)
	poll.Eventually(t, 20*time.Second, "the refusal tag gone after a registration", func() error {
		return poll.Check(refusedTag() == "", "tag %q", refusedTag())
	})
}

// A refused registration's fix fits the refusal: with no token (or an
// unknown one) the worker said "the worker's token may not register nodes",
// which sent an operator looking at a token's rights that was never sent.
func TestRefusalFixNamesTheTokenProblem(t *testing.T) {
	cases := []struct {
		code string
		want string
	}{
		{api.CodeUnauthorized, "sends no token, or one the servers do not know"},
		{api.CodeForbidden, "may not register node w7"},
	}
	for _, tc := range cases {
		fix := refusalFix(tc.code, "w7")
		if !strings.Contains(fix, tc.want) || !strings.Contains(fix, "--node-id w7") {
			t.Errorf("%s: %q, want it to say %q and name the node", tc.code, fix, tc.want)
		}
	}
}

// A worker whose token is revoked while it runs got 401 on every poll and
// said so only at Debug level, its node ready and eligible for good (on a
// real cluster, after 'acl token delete' of w2's token). It now registers
// again, which is refused: an Error with the fix, and the refusal tag.
func TestRunSaysItsTokenWasRevoked(t *testing.T) {
	var revoked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		switch {
		case revoked.Load():
			rw.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(rw, `{"error":{"code":"unauthorized","message":"ACL token not found"}}`)
		case r.Method == http.MethodPut:
			fmt.Fprint(rw, `{"id":"w3"}`)
		default: // the first poll: nothing assigned, then the token goes
			revoked.Store(true)
			rw.Header().Set(api.HeaderIndex, "5")
			fmt.Fprint(rw, `[]`)
		}
	}))
	t.Cleanup(srv.Close) // after the worker stops (cleanups run last first)
	w, h := runAgainst(t, srv.URL, "w3", 1)
	poll.Eventually(t, 15*time.Second, "an Error saying the token is refused", func() error {
		errs := h.At(slog.LevelError)
		return poll.Check(len(errs) == 1 && strings.Contains(errs[0], "sends no token, or one the servers do not know"),
			"errors logged: %q", errs)
	})
	poll.Eventually(t, 10*time.Second, "the refusal tag in gossip", func() error {
		m, _ := w.gossip.Member("w3")
		return poll.Check(m.Meta.Tags[gossip.TagRegistration] == gossip.RegistrationRefused, "tags %v", m.Meta.Tags)
	})
}

// runAgainst runs a worker of node id with capacity against the servers at
// url until the test ends, and returns it with its log.
func runAgainst(t *testing.T, url, id string, capacity float64) (*Worker, *logrec.Recorder) {
	t.Helper()
	h := &logrec.Recorder{}
	gc := gossip.DefaultConfig()
	gc.BindAddr, gc.BindPort = "127.0.0.1", 0
	w, err := New(Config{NodeID: id, Inventory: api.NodeSpec{Pool: "default", TotalCapacity: capacity},
		Servers: []string{url}, Gossip: gc, Logger: slog.New(h), Driver: NewNoneDriver()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = w.gossip.Shutdown()
	})
	return w, h
}
