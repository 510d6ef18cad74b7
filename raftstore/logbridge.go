package raftstore

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogBridge routes hashicorp/raft's hclog output into log/slog, so one
// handler formats and filters every line the server prints.
type hclogBridge struct {
	logger *slog.Logger
	name   string
	args   []any
	level  hclog.Level
}

var _ hclog.Logger = (*hclogBridge)(nil)

func newHclogBridge(logger *slog.Logger, name string, level hclog.Level) hclog.Logger {
	return &hclogBridge{logger: logger, name: name, level: level}
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
