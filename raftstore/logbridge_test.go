package raftstore

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestRepeatedPeerErrorsAreCollapsed: a Raft warning or error about one
// peer that recurs goes out once, then once a minute with how many were
// held back; other peers, lines without a peer and Info lines are not held.
// Loggers derived with With and Named share the count.
func TestRepeatedPeerErrorsAreCollapsed(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	b := &hclogBridge{logger: slog.New(slog.NewJSONHandler(&buf, nil)), name: "raft", level: hclog.Info,
		repeats: newRepeats(func() time.Time { return now }, time.Minute)}
	derived := b.Named("replication").With("extra", 1)
	steps := []struct {
		log     func()
		advance time.Duration
		want    int // lines out so far
	}{
		{func() { b.Error("failed to heartbeat to", "peer", "s2", "error", "refused") }, 0, 1},
		{func() { b.Error("failed to heartbeat to", "peer", "s2", "error", "refused") }, time.Second, 1},
		{func() { b.Error("failed to heartbeat to", "peer", "s2", "error", "timeout") }, time.Second, 1},
		{func() { b.Error("failed to heartbeat to", "peer", "s3", "error", "refused") }, 0, 2},
		{func() { b.Warn("failed to contact", "server-id", "s2", "time", "1s") }, 0, 3},
		{func() { b.Warn("failed to contact", "server-id", "s2", "time", "2s") }, 0, 3},
		{func() { b.Error("failed to contact quorum of nodes, stepping down") }, 0, 4},
		{func() { b.Error("failed to contact quorum of nodes, stepping down") }, 0, 5},
		{func() { b.Info("pipelining replication", "peer", "s2") }, 0, 6},
		{func() { b.Info("pipelining replication", "peer", "s2") }, 0, 7},
		{func() { derived.Error("failed to appendEntries to", "peer", "s2") }, 0, 8},
		{func() { derived.Error("failed to appendEntries to", "peer", "s2") }, 0, 8},
		{func() { b.Error("failed to heartbeat to", "peer", "s2", "error", "refused") }, time.Minute, 9},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		s.log()
		if got := bytes.Count(buf.Bytes(), []byte("\n")); got != s.want {
			t.Fatalf("step %d: %d lines out, want %d:\n%s", i, got, s.want, buf.String())
		}
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	var last map[string]any
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil {
		t.Fatal(err)
	}
	if last["heldBackSinceLast"] != float64(2) || last["peer"] != "s2" {
		t.Fatalf("the minute's line: %v, want heldBackSinceLast 2 for s2", last)
	}
}
