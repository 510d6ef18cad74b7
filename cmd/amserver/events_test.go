package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// eventStream fakes GET /v1/events: each connection gets the next script,
// a list of lines to write (keep-alives included), then is closed; the last
// one is held open until the client leaves.
type eventStream struct {
	mu      sync.Mutex
	scripts [][]string
	indexes []string // ?index= of each connection
}

func (s *eventStream) serve(f *fakeAPI) {
	f.on("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.indexes = append(s.indexes, r.URL.Query().Get("index"))
		n := len(s.indexes) - 1
		var script []string
		if n < len(s.scripts) {
			script = s.scripts[n]
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		for _, line := range script {
			_, _ = fmt.Fprintln(w, line)
			w.(http.Flusher).Flush()
		}
		if n >= len(s.scripts)-1 {
			<-r.Context().Done()
		}
	})
}

func eventLine(index uint64, typ, msg string) string {
	b, _ := json.Marshal(api.Event{Index: index, Time: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Type: typ, NodeID: "w-1", Message: msg})
	return string(b)
}

// TestEventsResumeAfterDrop: the stream is cut in the middle of entry 6
// (three events); the command reconnects from 5 and prints every event
// once, in order, ignoring keep-alive lines.
func TestEventsResumeAfterDrop(t *testing.T) {
	f := newFake(t)
	s := &eventStream{scripts: [][]string{
		{eventLine(5, "bundleCreated", "m5"), "", eventLine(6, "nodeStatus", "m6a"), eventLine(6, "nodeStatus", "m6b")},
		{eventLine(6, "nodeStatus", "m6a"), eventLine(6, "nodeStatus", "m6b"), "", eventLine(6, "nodeStatus", "m6c"),
			eventLine(8, "bundlePlaced", "m8")},
	}}
	s.serve(f)
	r := runCLI(t, f.srv.URL, "", "events", "--index", "4", "--timeout", "2s")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		got = append(got, strings.Fields(l)[len(strings.Fields(l))-1])
	}
	if want := "[m5 m6a m6b m6c m8]"; fmt.Sprint(got) != want {
		t.Errorf("messages = %v, want %s\n%s", got, want, r.stdout)
	}
	if got := cell(t, r.stdout, "TYPE", "8"); got != "bundlePlaced" {
		t.Errorf("TYPE of 8 = %q\n%s", got, r.stdout)
	}
	if got := cell(t, r.stdout, "NODE", "5"); got != "w-1" {
		t.Errorf("NODE of 5 = %q\n%s", got, r.stdout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fmt.Sprint(s.indexes) != "[4 5]" {
		t.Errorf("connections asked for %v, want [4 5]", s.indexes)
	}
	if !strings.Contains(r.stderr, "resuming after index 6") {
		t.Errorf("no reconnect note: %q", r.stderr)
	}
}

// --type filters, and --json prints one event per line.
func TestEventsTypeFilterJSON(t *testing.T) {
	f := newFake(t)
	s := &eventStream{scripts: [][]string{
		{eventLine(5, "bundleCreated", "m5"), eventLine(6, "nodeStatus", "m6"), eventLine(7, "failover", "m7")},
	}}
	s.serve(f)
	r := runCLI(t, f.srv.URL, "", "events", "--type", "nodeStatus", "--type", "failover", "--json", "--timeout", "1s")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got []uint64
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev api.Event
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, ev.Index)
	}
	if fmt.Sprint(got) != "[6 7]" {
		t.Errorf("indexes = %v, want [6 7]", got)
	}
}

// A refusal that would repeat ends the command; a bad --type is a usage error.
func TestEventsErrors(t *testing.T) {
	f := newFake(t)
	f.fail("GET /v1/events", http.StatusForbidden, api.CodeForbidden, "token lacks read")
	r := runCLI(t, f.srv.URL, "", "events", "--timeout", "10s")
	if r.code != exitFailure || !strings.Contains(r.stderr, "token lacks read") {
		t.Errorf("403: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := len(f.seen()); n != 1 {
		t.Errorf("a 403 was retried: %d requests", n)
	}
	r = runCLI(t, f.srv.URL, "", "events", "--type", "bundleExploded")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown event type "bundleExploded"`) {
		t.Errorf("bad --type: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A follow that ends while the stream is down (a server that never
// answered, or one that keeps failing) watched nothing: it exits non-zero
// saying so, not 0 as if the time had passed quietly.
func TestEventsEndWhileDown(t *testing.T) {
	tests := []struct {
		name, want string
		addr       func(t *testing.T) string
	}{
		{"unreachable", "cannot reach the server", func(t *testing.T) string {
			f := newFake(t)
			f.srv.Close()
			return f.srv.URL
		}},
		{"no leader", "no leader", func(t *testing.T) string {
			f := newFake(t)
			f.fail("GET /v1/events", http.StatusServiceUnavailable, api.CodeNoLeader, "no leader")
			return f.srv.URL
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.addr(t), "", "events", "--timeout", "1s")
			if r.code != exitFailure || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// TestEventRowsLineUp: every event type, with a node id of an elastic pool,
// leaves the message where the header puts MESSAGE.
func TestEventRowsLineUp(t *testing.T) {
	var out bytes.Buffer
	p := newEventPrinter(&out, false)
	for i, typ := range api.EventTypes {
		ev := api.Event{Index: uint64(i + 1), Type: typ, NodeID: "burst-1c9e0f2a", BundleID: "channel-1", Message: "msg"}
		if err := p.print(ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	col := strings.Index(lines[0], "MESSAGE")
	for _, line := range lines[1:] {
		if strings.Index(line, "msg") != col {
			t.Fatalf("message not under MESSAGE (column %d):\n%s\n%s", col, lines[0], line)
		}
	}
}
