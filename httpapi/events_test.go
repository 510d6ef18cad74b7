package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
)

// rawStream is GET /v1/events read line by line, keep-alives included.
type rawStream struct {
	lines  chan string // each line without its newline; closed at the end
	done   chan error  // how the body ended: nil for a clean end
	cancel context.CancelFunc
}

func openStream(t *testing.T, e *env, query string) *rawStream {
	t.Helper()
	c, cancel := context.WithCancel(ctx(t))
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(c, http.MethodGet, e.hs.URL+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("GET /v1/events%s: %d %s", query, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &rawStream{lines: make(chan string, 64), done: make(chan error, 1), cancel: cancel}
	go func() {
		defer func() { _ = resp.Body.Close() }()
		defer close(s.lines)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err == io.EOF && line == "" {
				s.done <- nil
				return
			}
			if err != nil {
				s.done <- fmt.Errorf("after %q: %w", line, err)
				return
			}
			s.lines <- line[:len(line)-1]
		}
	}()
	return s
}

// next returns the next line, failing the test after d.
func (s *rawStream) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			t.Fatalf("stream ended: %v", <-s.done)
		}
		return line
	case <-time.After(d):
		t.Fatalf("no line within %v", d)
	}
	return ""
}

// nextEvent skips keep-alives and decodes the next event line.
func (s *rawStream) nextEvent(t *testing.T, d time.Duration) api.Event {
	t.Helper()
	for {
		line := s.next(t, d)
		if line == "" {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		return ev
	}
}

// cordon records one nodeStatus event in its own raft entry.
func cordon(t *testing.T, b *testBackend, on bool) uint64 {
	t.Helper()
	return b.mustApply(t, fsm.NodeCordonType, fsm.NodeFlagRequest{NodeID: "n1", On: on}).Index
}

// An idle stream sends a blank line every keep-alive interval, and the Go
// client skips them.
func TestEventsKeepAlive(t *testing.T) {
	b := newTestBackend("s1")
	e := newEnv(t, b, func(c *Config) { c.KeepAlive = 20 * time.Millisecond })
	b.setLeader(e.hs.URL)
	seedCluster(t, b)
	s := openStream(t, e, fmt.Sprintf("?index=%d", b.State().Index()))
	for range 3 {
		if line := s.next(t, 10*time.Second); line != "" {
			t.Fatalf("idle stream sent %q, want a blank keep-alive line", line)
		}
	}

	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	got := make(chan api.Event, 4)
	ended := make(chan error, 1)
	seen := &countingTransport{}
	client, err := api.New(e.hs.URL, api.WithMaxRetries(0), api.WithHTTPClient(seen.client()))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ended <- client.Events(c, b.State().Index(), func(ev api.Event) error { got <- ev; return nil })
	}()
	// Nothing but keep-alives (one newline each) is sent before the cordon.
	poll.Eventually(t, 10*time.Second, "several keep-alives to reach the client", func() error {
		return poll.Check(seen.bodyBytes.Load() >= 3, "%d bytes read", seen.bodyBytes.Load())
	})
	idx := cordon(t, b, true)
	select {
	case ev := <-got:
		if ev.Index != idx || ev.Type != api.EventNodeStatus {
			t.Fatalf("event after keep-alives = %+v, want nodeStatus at %d", ev, idx)
		}
	case err := <-ended:
		t.Fatalf("client stopped at a keep-alive: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
}

// Resuming from the last index read gives exactly the later events: none
// repeated, none lost, including those recorded while disconnected.
func TestEventsResume(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	var all []uint64 // indexes of the events after the seed, one per entry
	for i := range 4 {
		all = append(all, cordon(t, e.b, i%2 == 0))
	}
	from := all[0] - 1
	s := openStream(t, e, fmt.Sprintf("?index=%d", from))
	var seen []uint64
	for range 2 {
		seen = append(seen, s.nextEvent(t, 10*time.Second).Index)
	}
	s.cancel()
	for i := range 3 {
		all = append(all, cordon(t, e.b, i%2 == 0)) // while nobody listens
	}
	s = openStream(t, e, fmt.Sprintf("?index=%d", seen[len(seen)-1]))
	for len(seen) < len(all) {
		seen = append(seen, s.nextEvent(t, 10*time.Second).Index)
	}
	all = append(all, cordon(t, e.b, false)) // live, after the catch-up
	seen = append(seen, s.nextEvent(t, 10*time.Second).Index)
	if fmt.Sprint(seen) != fmt.Sprint(all) {
		t.Fatalf("events across the reconnect = %v, want %v", seen, all)
	}
	select {
	case line := <-s.lines:
		if line != "" {
			t.Fatalf("unexpected line after the last event: %q", line)
		}
	case <-time.After(50 * time.Millisecond):
	}
}

// A stream from an index beyond the current one waits for events past it,
// and ends cleanly (a complete chunked body, no partial line) when the
// server stops.
func TestEventsFutureIndexWaitsAndEndsOnStop(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	future := e.b.State().Index() + 2
	s := openStream(t, e, fmt.Sprintf("?index=%d", future))
	cordon(t, e.b, true)
	cordon(t, e.b, false) // index future: still not past it
	want := cordon(t, e.b, true)
	if ev := s.nextEvent(t, 10*time.Second); ev.Index != want || ev.Index <= future {
		t.Fatalf("first event = %+v, want index %d (past %d)", ev, want, future)
	}
	e.s.stop()
	for line := range s.lines {
		if line != "" {
			t.Errorf("unexpected line after the last event: %q", line)
		}
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("stream did not end cleanly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open after the server stopped")
	}
}

// A stream without ?index starts at the current index: it sends only what
// happens after it opened. With ?index=0 it replays the whole log, a page
// at a time, in order and without a gap between pages.
func TestEventsStartAndReplay(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	for i := range eventPage + 40 {
		cordon(t, e.b, i%2 == 0)
	}
	all := e.b.State().Events(0, 0)
	live := openStream(t, e, "")
	want := cordon(t, e.b, true)
	if ev := live.nextEvent(t, 10*time.Second); ev.Index != want {
		t.Fatalf("stream without ?index sent %+v first, want the new event at %d", ev, want)
	}
	replay := openStream(t, e, "?index=0")
	for i, old := range all {
		if ev := replay.nextEvent(t, 10*time.Second); ev.Index != old.Index {
			t.Fatalf("replayed event %d has index %d, want %d", i, ev.Index, old.Index)
		}
	}
	if ev := replay.nextEvent(t, 10*time.Second); ev.Index != want {
		t.Fatalf("after the replay: %+v, want index %d", ev, want)
	}
}

// TestEventLines: an event's line is encoded once and reused while the
// event at that position is the same; another event there (after a
// restore) gets its own line; past the bound, the lines of events the
// state no longer holds are dropped.
func TestEventLines(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	for i := range 8 {
		cordon(t, e.b, i%2 == 0)
	}
	st := e.b.State()
	events := st.Events(0, 0)
	l := newEventLines(len(events))
	first, err := l.lines(st, events)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.lines(st, events)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		if &first[i][0] != &again[i][0] {
			t.Fatalf("event %d encoded twice", i)
		}
		var got api.Event
		if err := json.Unmarshal(first[i], &got); err != nil || got.Index != events[i].Index || got.Message != events[i].Message {
			t.Fatalf("line %d is %q (%v), want event %+v", i, first[i], err, events[i])
		}
	}
	other := events[0]
	other.Message = "restored from another snapshot"
	lines, err := l.lines(st, []fsm.Event{other})
	if err != nil || !strings.Contains(string(lines[0]), other.Message) {
		t.Fatalf("a different event at a kept position got %q, %v", lines[0], err)
	}
	stale := fsm.Event{Index: 1, Seq: 99, Type: "old", Message: "pruned long ago"}
	if events[0].Index <= stale.Index {
		t.Fatalf("seeded events start at %d, the test needs them above 1", events[0].Index)
	}
	if _, err := l.lines(st, []fsm.Event{stale}); err != nil {
		t.Fatal(err)
	}
	if _, kept := l.kept[eventKey{index: 1, seq: 99}]; kept || len(l.kept) > l.max {
		t.Fatalf("past the bound: %d lines kept (max %d), the pruned event's kept: %v", len(l.kept), l.max, kept)
	}
}
