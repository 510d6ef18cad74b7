package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// The log lines of hashicorp/raft (v1.7) that mark a snapshot install: the
// leader's start of the InstallSnapshot RPC and, on the follower, the end
// of the stream spilled to its snapshot store; a server's log compaction;
// an election won; and a starting server's restore of its own snapshot.
const (
	msgSnapSend      = "installing snapshot on"         // leader; peer, size
	msgSnapCopied    = "copied to local snapshot"       // follower; bytes
	msgSnapCompacted = "compacting logs"                // any server; from, to
	msgLeader        = "entering leader state"          // a server won an election
	msgOwnRestore    = "starting restore from snapshot" // a starting server; size-in-bytes, last-index
	msgOwnRestored   = "restored from snapshot"         // a starting server
)

// The leader's complaints about a peer it cannot reach: the suite stops a
// follower on purpose, so they are left out of the report's log.
const (
	msgPeerDown1 = "failed to appendEntries to"
	msgPeerDown2 = "failed to heartbeat to"
	msgPeerDown3 = "failed to contact"
)

// catchupEvent is one recorded log line of one server.
type catchupEvent struct {
	at    time.Time
	node  string
	msg   string
	attrs map[string]string
}

// catchupEvents records the snapshot lines of every server's Raft, with
// the time raft logged them.
type catchupEvents struct {
	mu     sync.Mutex
	events []catchupEvent
}

// handler is the slog handler for server node: it records the snapshot
// lines and passes warnings and errors on to next.
func (e *catchupEvents) handler(node string, next slog.Handler) slog.Handler {
	return &catchupHandler{events: e, node: node, next: writeLevelHandler{Handler: next, min: slog.LevelWarn}}
}

func (e *catchupEvents) record(ev catchupEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

// since returns the events of node (any node when "") with message msg at
// or after t.
func (e *catchupEvents) since(t time.Time, node, msg string) []catchupEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []catchupEvent
	for _, ev := range e.events {
		if !ev.at.Before(t) && (node == "" || ev.node == node) && ev.msg == msg {
			out = append(out, ev)
		}
	}
	return out
}

type catchupHandler struct {
	events *catchupEvents
	node   string
	next   slog.Handler
}

func (h *catchupHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *catchupHandler) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case msgPeerDown1, msgPeerDown2, msgPeerDown3:
		return nil // the leader's retries toward the stopped follower, expected here
	case msgSnapSend, msgSnapCopied, msgSnapCompacted, msgLeader, msgOwnRestore, msgOwnRestored:
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		h.events.record(catchupEvent{at: r.Time, node: h.node, msg: r.Message, attrs: attrs})
	}
	if h.next.Enabled(ctx, r.Level) {
		if err := h.next.Handle(ctx, r); err != nil {
			return fmt.Errorf("log: %w", err)
		}
	}
	return nil
}

func (h *catchupHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &catchupHandler{events: h.events, node: h.node, next: h.next.WithAttrs(as)}
}

func (h *catchupHandler) WithGroup(name string) slog.Handler {
	return &catchupHandler{events: h.events, node: h.node, next: h.next.WithGroup(name)}
}
