package gossip

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// logBridge is the io.Writer behind the *log.Logger that memberlist insists
// on. It turns memberlist's "[LEVEL] memberlist: msg" lines into slog records
// and lets Gossip observe the one line that reveals a local suspicion.
type logBridge struct {
	logger    *slog.Logger
	onSuspect func(node string) // may be nil
}

// newStdLogger returns a *log.Logger writing into slog. Flags are zero because
// slog adds its own time.
func newStdLogger(logger *slog.Logger, onSuspect func(string)) *log.Logger {
	return log.New(&logBridge{logger: logger, onSuspect: onSuspect}, "", 0)
}

func (w *logBridge) Write(p []byte) (int, error) {
	level, msg := parseLogLine(string(p))
	if w.onSuspect != nil {
		if node, ok := suspectedNode(msg); ok {
			w.onSuspect(node)
		}
	}
	w.logger.Log(context.Background(), level, msg, "source", "memberlist")
	return len(p), nil
}

// parseLogLine splits "[WARN] memberlist: text\n" into a level and "text".
// Lines without a recognisable prefix are logged at info, unchanged.
func parseLogLine(s string) (slog.Level, string) {
	s = strings.TrimRight(s, "\r\n")
	level := slog.LevelInfo
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i > 0 {
			level = levelOf(s[1:i])
			s = strings.TrimSpace(s[i+1:])
		}
	}
	s = strings.TrimPrefix(s, "memberlist: ")
	return level, s
}

func levelOf(tag string) slog.Level {
	switch strings.ToUpper(tag) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN", "WARNING":
		return slog.LevelWarn
	case "ERR", "ERROR":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// suspectedNode recognises the line memberlist v0.5.4 prints immediately
// before it marks a node suspect after its own failed probe (state.go,
// probeNode). memberlist has no API for suspect state: Node.State is shadowed
// by nodeState.State and always reads StateAlive. TestSuspectThenDead guards
// this text against a library upgrade.
func suspectedNode(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "Suspect ")
	if !ok {
		return "", false
	}
	node, ok := strings.CutSuffix(rest, " has failed, no acks received")
	return node, ok && node != ""
}
