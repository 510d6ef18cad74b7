package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

func TestClassify(t *testing.T) {
	apiErr := func(status int, code string) error {
		return fmt.Errorf("wrapped: %w", &api.Error{Status: status, Code: code})
	}
	tests := []struct {
		name     string
		err      error
		code     string
		mutating Outcome // for write, cas and create
	}{
		{"noLeader", apiErr(503, api.CodeNoLeader), api.CodeNoLeader, Fail},
		{"outcomeUnknown", apiErr(503, api.CodeOutcomeUnknown), api.CodeOutcomeUnknown, Unknown},
		{"other 503", apiErr(503, api.CodeInternal), api.CodeInternal, Unknown},
		{"500", apiErr(500, api.CodeInternal), api.CodeInternal, Unknown},
		{"cas mismatch", apiErr(409, api.CodeCASMismatch), api.CodeCASMismatch, Fail},
		{"exists", apiErr(409, api.CodeConflict), api.CodeConflict, Fail},
		{"not found", apiErr(404, api.CodeNotFound), api.CodeNotFound, Fail},
		{"validation", apiErr(422, api.CodeValidationFailed), api.CodeValidationFailed, Fail},
		{"bad request", apiErr(400, api.CodeBadRequest), api.CodeBadRequest, Fail},
		{"timeout", fmt.Errorf("put: %w", context.DeadlineExceeded), CodeTimeout, Unknown},
		{"eof", fmt.Errorf("put: %w", io.EOF), CodeTransport, Unknown},
		{"reset", errors.New("read tcp: connection reset by peer"), CodeTransport, Unknown},
		{"refused", &url.Error{Op: "Put", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, CodeDial, Fail},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}, CodeDial, Fail},
		{"read after send", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, CodeTransport, Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, kind := range []Kind{KindRead, KindWrite, KindCAS, KindCreate} {
				op := Op{Kind: kind}
				classify(&op, tc.err)
				want := tc.mutating
				if kind == KindRead {
					want = Fail // a read changes nothing
				}
				if op.Outcome != want || op.Code != tc.code || op.Error == "" {
					t.Errorf("%s: outcome %s code %q error %q; want %s %q", kind, op.Outcome, op.Code, op.Error, want, tc.code)
				}
			}
		})
	}
}

func TestHistory(t *testing.T) {
	h := NewHistory()
	a := h.Add(Op{Kind: KindRead, Call: 30})
	b := h.Add(Op{Kind: KindWrite, Call: 10})
	if a.ID != 0 || b.ID != 1 {
		t.Fatalf("ids %d %d", a.ID, b.ID)
	}
	h.AddSample(Sample{Server: "s2", Call: 5, Bundles: make([]api.Bundle, 2)})
	h.AddSample(Sample{Server: "s1", Call: 1})
	ops := h.Ops()
	if ops[0].ID != 1 || ops[1].ID != 0 {
		t.Fatalf("ops not ordered by call: %+v", ops)
	}
	if s := h.Samples(); s[0].Server != "s1" {
		t.Fatalf("samples not ordered by call: %+v", s)
	}
	if n1, n2 := h.Now(), h.Now(); n2 < n1 || n1 < 0 {
		t.Fatalf("clock goes back: %d then %d", n1, n2)
	}
	var buf bytes.Buffer
	if err := h.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Ops     []Op            `json:"ops"`
		Samples []SampleSummary `json:"samples"`
	}
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil || len(out.Ops) != 2 || out.Samples[1].Bundles != 2 {
		t.Fatalf("history json: %v %s", err, buf.String())
	}
}

// faultyServer answers reads, hangs unconditional writes past any client
// timeout, answers cas with outcomeUnknown and creates with noLeader.
func faultyServer(t *testing.T) string {
	t.Helper()
	var reads atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/bundles/{id}", func(w http.ResponseWriter, r *http.Request) {
		n := reads.Add(1)
		w.Header().Set(api.HeaderIndex, fmt.Sprint(n))
		b := api.Bundle{BundleSpec: RegisterSpec("e2e", r.PathValue("id"), 0), ModifyIndex: 4}
		_ = json.NewEncoder(w).Encode(b)
	})
	mux.HandleFunc("PUT /v1/bundles/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("cas") {
			writeErr(w, 503, api.CodeOutcomeUnknown)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("POST /v1/bundles", func(w http.ResponseWriter, r *http.Request) { writeErr(w, 503, api.CodeNoLeader) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRunClassifiesOverHTTP drives the faulty server and checks what the
// history records for each kind.
func TestRunClassifiesOverHTTP(t *testing.T) {
	url := faultyServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
	defer cancel()
	h := NewHistory()
	cfg := Config{Servers: []string{url}, Clients: 3, OpTimeout: 50 * time.Millisecond, Think: time.Millisecond, Seed: 7}
	if err := Run(ctx, cfg, h); err != nil {
		t.Fatal(err)
	}
	want := map[Kind]struct {
		out  Outcome
		code string
	}{
		KindRead: {OK, ""}, KindWrite: {Unknown, CodeTimeout}, KindCAS: {Unknown, api.CodeOutcomeUnknown},
		KindCreate: {Fail, api.CodeNoLeader},
	}
	// Any op may also run out of its 50 ms on a loaded machine: a read
	// is then failed, a write unknown, both with code timeout. Each kind's
	// own answer must still be classified as above at least once.
	timedOut := map[Kind]Outcome{KindRead: Fail, KindWrite: Unknown, KindCAS: Unknown, KindCreate: Unknown}
	seen := map[Kind]int{}
	values := map[int64]bool{}
	for _, op := range h.Ops() {
		w := want[op.Kind]
		switch {
		case op.Outcome == w.out && op.Code == w.code:
			seen[op.Kind]++
		case op.Outcome != timedOut[op.Kind] || op.Code != CodeTimeout:
			t.Fatalf("op %+v: want %s %q (or %s %q)", op, w.out, w.code, timedOut[op.Kind], CodeTimeout)
		}
		if op.Kind == KindCAS && (op.CAS != 4 || op.Expect != 0) {
			t.Fatalf("cas op sent cas=%d expect=%d, want 4 and 0", op.CAS, op.Expect)
		}
		if op.Kind == KindWrite || op.Kind == KindCAS {
			if values[op.Value] || op.Value == 0 {
				t.Fatalf("written value %d not unique", op.Value)
			}
			values[op.Value] = true
		}
		if op.Return < op.Call || op.Server != url {
			t.Fatalf("bad op bounds or server: %+v", op)
		}
	}
	for k := range want {
		if seen[k] == 0 {
			t.Errorf("no %s op answered as expected in %d ops", k, len(h.Ops()))
		}
	}
}

func writeErr(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: &api.Error{Code: code, Message: "test"}})
}

func TestConfigErrors(t *testing.T) {
	if err := Run(t.Context(), Config{}, NewHistory()); err == nil {
		t.Fatal("Run without servers succeeded")
	}
	if err := Setup(t.Context(), Config{Servers: []string{"ftp://x"}}); err == nil {
		t.Fatal("Setup with a bad address succeeded")
	}
}
