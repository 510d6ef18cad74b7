package worker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Files of an assignment's directory: every driver writes the workload's
// output there, so that logs are read the same way whatever the runtime.
const (
	stdoutLog = "stdout.log"
	stderrLog = "stderr.log"
)

// taskName is the one name an assignment's workload goes by on this node:
// its compose project, its container, its directory. It is derived from the
// assignment ID alone, so it is stable across worker restarts; the hash
// keeps IDs that differ only in characters a name cannot hold apart. It
// satisfies compose's project-name rule (lowercase letters, digits, "-"
// and "_", starting with a letter or digit) and Docker's container-name
// rule.
func taskName(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return "am-" + b.String() + "-" + hex.EncodeToString(sum[:5])
}

// taskDir is the assignment's directory under root.
func taskDir(root, id string) string { return filepath.Join(root, taskName(id)) }

// openLogs opens (appending) the assignment's stdout and stderr files.
func openLogs(dir string) (stdout, stderr *os.File, err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("assignment directory: %w", err)
	}
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	}
	if stdout, err = open(stdoutLog); err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	if stderr, err = open(stderrLog); err != nil {
		_ = stdout.Close()
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	return stdout, stderr, nil
}

// maxMessage bounds a status message: it travels through Raft.
const maxMessage = 2048

// lastLines returns up to n last lines of text, cut to fit a status
// message, with invalid UTF-8 replaced.
func lastLines(text []byte, n int) string {
	text = bytes.TrimRight(text, "\n")
	lines := bytes.Split(text, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.ToValidUTF8(string(bytes.Join(lines, []byte("\n"))), "?")
	if len(out) > maxMessage {
		out = out[len(out)-maxMessage:]
		for !utf8.ValidString(out) {
			out = out[1:]
		}
	}
	return out
}

// tailFile reads the last lines of a file from offset from on (at most
// its last 64 KiB): a run's own output in a file that every run of the
// task appends to.
func tailFile(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	if st, err := f.Stat(); err == nil {
		from = max(min(from, st.Size()), st.Size()-window)
	}
	if _, err := f.Seek(max(from, 0), io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, window))
	return lastLines(b, n)
}

// failureMessage says how a workload ended, with its last output lines,
// keeping the head whole when the whole is too long.
func failureMessage(what string, code int, tail string) string {
	msg := fmt.Sprintf("%s exited with code %d", what, code)
	if tail == "" {
		return msg
	}
	if room := maxMessage - len(msg) - 2; len(tail) > room {
		tail = tail[len(tail)-max(room, 0):]
		for !utf8.ValidString(tail) {
			tail = tail[1:]
		}
	}
	return msg + ": " + tail
}
