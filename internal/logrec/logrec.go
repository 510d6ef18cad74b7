// Package logrec is a slog.Handler that keeps every record, for tests that
// check what an operator would read: that a warning is logged, and once.
package logrec

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Recorder keeps the records logged through it; safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

var _ slog.Handler = (*Recorder)(nil)

// Enabled implements slog.Handler: every level is kept.
func (h *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs implements slog.Handler; the attributes are not kept.
func (h *Recorder) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup implements slog.Handler; groups are not kept.
func (h *Recorder) WithGroup(string) slog.Handler { return h }

// Handle implements slog.Handler.
func (h *Recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// Count counts the records at level or above whose message is msg.
func (h *Recorder) Count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level >= level && r.Message == msg {
			n++
		}
	}
	return n
}

// At lists the records of exactly level, each as its message followed by
// its attributes (" key=value").
func (h *Recorder) At(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level != level {
			continue
		}
		line := r.Message
		r.Attrs(func(a slog.Attr) bool { line += fmt.Sprintf(" %s=%v", a.Key, a.Value); return true })
		out = append(out, line)
	}
	return out
}

// Saw reports whether a record's message starts with prefix.
func (h *Recorder) Saw(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if strings.HasPrefix(r.Message, prefix) {
			return true
		}
	}
	return false
}

// Messages lists every record's message, in the order logged.
func (h *Recorder) Messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.records))
	for i, r := range h.records {
		out[i] = r.Message
	}
	return out
}
