package raftstore

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogBridge routes hashicorp/raft's hclog output into log/slog, so one
// handler formats and filters every line the server prints.
type hclogBridge struct {
	logger  *slog.Logger
	name    string
	args    []any
	level   hclog.Level
	repeats *repeats // shared by the loggers With and Named derive
}

var _ hclog.Logger = (*hclogBridge)(nil)

func newHclogBridge(logger *slog.Logger, name string, level hclog.Level) hclog.Logger {
	return &hclogBridge{logger: logger, name: name, level: level, repeats: newRepeats(time.Now, repeatEvery)}
}

// repeatEvery is how often a warning or error about one peer that keeps
// recurring is logged again.
const repeatEvery = time.Minute

// repeats collapses a Raft warning or error that recurs for one peer: with
// a server down, Raft logs "failed to heartbeat to" it about once a second
// (and "failed to contact" at every check) for as long as it is gone. The
// first goes out, then one a minute saying how many were held back. Lines
// that name no peer pass unchanged.
type repeats struct {
	mu    sync.Mutex
	now   func() time.Time
	every time.Duration
	seen  map[string]*repeat
}

type repeat struct {
	at   time.Time // when one last went out
	held int       // how many since
}

func newRepeats(now func() time.Time, every time.Duration) *repeats {
	return &repeats{now: now, every: every, seen: map[string]*repeat{}}
}

// admit reports whether the line keyed key goes out now, and how many like
// it were held back since the last that did.
func (r *repeats) admit(key string) (out bool, held int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	s := r.seen[key]
	if s != nil && now.Sub(s.at) < r.every {
		s.held++
		return false, 0
	}
	if s != nil {
		held = s.held
	}
	if len(r.seen) >= 1024 { // peers come and go: forget the quiet ones
		for k, v := range r.seen {
			if now.Sub(v.at) >= r.every {
				delete(r.seen, k)
			}
		}
	}
	r.seen[key] = &repeat{at: now}
	return true, held
}

// peerOf is the peer a Raft line is about, from its "peer" or "server-id"
// argument; "" when it names none.
func peerOf(args []any) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "peer" || k == "server-id" {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (b *hclogBridge) Log(level hclog.Level, msg string, args ...any) {
	if level < b.level || level == hclog.Off {
		return
	}
	attrs := append(append([]any{"component", b.name}, b.args...), args...)
	if peer := peerOf(args); peer != "" && level >= hclog.Warn && b.repeats != nil {
		out, held := b.repeats.admit(b.name + "\x00" + msg + "\x00" + peer)
		if !out {
			return
		}
		if held > 0 {
			attrs = append(attrs, "heldBackSinceLast", held)
		}
	}
	b.logger.Log(context.Background(), slogLevel(level), msg, attrs...)
}

func (b *hclogBridge) Trace(msg string, args ...any) { b.Log(hclog.Trace, msg, args...) }
func (b *hclogBridge) Debug(msg string, args ...any) { b.Log(hclog.Debug, msg, args...) }
func (b *hclogBridge) Info(msg string, args ...any)  { b.Log(hclog.Info, msg, args...) }
func (b *hclogBridge) Warn(msg string, args ...any)  { b.Log(hclog.Warn, msg, args...) }
func (b *hclogBridge) Error(msg string, args ...any) { b.Log(hclog.Error, msg, args...) }

func (b *hclogBridge) IsTrace() bool { return b.level <= hclog.Trace }
func (b *hclogBridge) IsDebug() bool { return b.level <= hclog.Debug }
func (b *hclogBridge) IsInfo() bool  { return b.level <= hclog.Info }
func (b *hclogBridge) IsWarn() bool  { return b.level <= hclog.Warn }
func (b *hclogBridge) IsError() bool { return b.level <= hclog.Error }

func (b *hclogBridge) ImpliedArgs() []any { return b.args }

func (b *hclogBridge) With(args ...any) hclog.Logger {
	cp := *b
	cp.args = append(append([]any(nil), b.args...), args...)
	return &cp
}

func (b *hclogBridge) Name() string { return b.name }

func (b *hclogBridge) Named(name string) hclog.Logger {
	cp := *b
	if cp.name != "" {
		name = cp.name + "." + name
	}
	cp.name = name
	return &cp
}

func (b *hclogBridge) ResetNamed(name string) hclog.Logger {
	cp := *b
	cp.name = name
	return &cp
}

func (b *hclogBridge) SetLevel(level hclog.Level) { b.level = level }
func (b *hclogBridge) GetLevel() hclog.Level      { return b.level }

func (b *hclogBridge) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(b.logger.Handler(), slog.LevelInfo)
}

func (b *hclogBridge) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return b.StandardLogger(nil).Writer()
}
