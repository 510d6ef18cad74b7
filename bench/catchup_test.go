package bench

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestCatchupRows(t *testing.T) {
	full := catchupRun{
		bundles: 100_000, behind: 10_000, target: 300, followerLast: 100, compactedTo: 200,
		opened: 100 * time.Millisecond, sent: time.Second, copied: 1500 * time.Millisecond,
		restored: 3 * time.Second, caughtUp: 3100 * time.Millisecond, size: 64 << 20,
	}
	slow := full
	slow.caughtUp = 5001 * time.Millisecond
	atGoal := full
	atGoal.caughtUp = 5 * time.Second
	quick := full
	quick.bundles, quick.caughtUp = 10_000, 600*time.Millisecond // the goal scales to 0.5 s
	slowOpen := full                                             // the leader's RPC waits for the follower's open
	slowOpen.opened, slowOpen.ownStart, slowOpen.ownEnd = 1200*time.Millisecond, 50*time.Millisecond, 1150*time.Millisecond
	noSteps := catchupRun{bundles: 100_000, caughtUp: 2 * time.Second}
	tests := []struct {
		name  string
		m     catchupRun
		met   bool
		rows  int
		steps []float64 // values of the rows after the first (open, send, transfer, restore, entries, size)
	}{
		{"met", full, true, 7, []float64{0.1, 1, 0.5, 1.5, 0.1, 64}},
		{"just missed", slow, false, 7, []float64{0.1, 1, 0.5, 1.5, 2.001, 64}},
		{"transfer counted from the open", slowOpen, true, 7, []float64{1.2, 1, 0.3, 1.5, 0.1, 64}},
		{"at the goal", atGoal, true, 7, nil},
		{"quick run's scaled goal", quick, false, 7, nil},
		{"no install seen", noSteps, true, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := catchupRows(tc.m)
			if len(rs) != tc.rows {
				t.Fatalf("%d rows, want %d: %+v", len(rs), tc.rows, rs)
			}
			if rs[0].Met == nil || *rs[0].Met != tc.met || rs[0].Target == "" {
				t.Fatalf("goal row: met %v target %q, want met %v", rs[0].Met, rs[0].Target, tc.met)
			}
			for i, want := range tc.steps {
				if got := rs[i+1].Value; got < want-1e-9 || got > want+1e-9 {
					t.Fatalf("row %q: %v, want %v", rs[i+1].Name, got, want)
				}
			}
		})
	}
}

func TestCatchupEventsRecordSnapshotLines(t *testing.T) {
	ev := &catchupEvents{}
	logger := slog.New(ev.handler("s1", slog.DiscardHandler)).With("component", "raft")
	before := time.Now()
	logger.Info(msgSnapSend, "peer", "s2", "id", "x", "size", int64(42))
	logger.Info("entering follower state") // not a snapshot line
	logger.Error(msgPeerDown1, "peer", "s2")
	got := ev.since(before, "s1", msgSnapSend)
	if len(got) != 1 || got[0].attrs["peer"] != "s2" || got[0].attrs["size"] != "42" {
		t.Fatalf("recorded %+v", got)
	}
	if n := len(ev.since(before, "s2", msgSnapSend)); n != 0 {
		t.Fatalf("%d events of another node", n)
	}
	if n := len(ev.since(time.Now().Add(time.Second), "s1", msgSnapSend)); n != 0 {
		t.Fatalf("%d events before the start", n)
	}
	h := ev.handler("s1", slog.DiscardHandler)
	if !h.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("info lines must reach the recorder")
	}
}

func TestCatchupEventsPassWarningsButNotPeerDown(t *testing.T) {
	var buf bytes.Buffer
	ev := &catchupEvents{}
	logger := slog.New(ev.handler("s1", slog.NewTextHandler(&buf, nil)))
	logger.Info(msgSnapCopied, "bytes", int64(7))
	logger.Error(msgPeerDown2, "peer", "s2")
	logger.Warn("an unexpected warning")
	out := buf.String()
	if strings.Contains(out, msgPeerDown2) || strings.Contains(out, msgSnapCopied) || !strings.Contains(out, "an unexpected warning") {
		t.Fatalf("passed on:\n%s", out)
	}
}
