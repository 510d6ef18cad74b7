package worker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLogReaderFollowsToTheEnd: a follower gets everything the task wrote,
// its last lines included, whatever happens to the file when the task
// ends: a finished batch job's output moved to the retain store (the
// bundle ended before the follower's next look), a stopped task's
// directory removed, a task started again writing a new file. Each case's
// script runs at the follower's second look, as the task's end would
// between two looks.
func TestLogReaderFollowsToTheEnd(t *testing.T) {
	appendTo := func(t *testing.T, path, text string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		end  func(t *testing.T, dir, log string) (live, held bool)
		want string
	}{
		{"moved to the retain store", func(t *testing.T, dir, log string) (bool, bool) {
			appendTo(t, log, "last\n")
			kept := filepath.Join(t.TempDir(), stdoutLog)
			if err := os.Rename(log, kept); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return false, true
		}, "first\nlast\n"},
		{"directory removed", func(t *testing.T, dir, log string) (bool, bool) {
			appendTo(t, log, "last\n")
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return false, false
		}, "first\nlast\n"},
		{"started again", func(t *testing.T, dir, log string) (bool, bool) {
			appendTo(t, log, "old end\n")
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log, []byte("new\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return true, true
		}, "first\nold end\nnew\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "task")
			if err := os.MkdirAll(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, stdoutLog)
			if err := os.WriteFile(log, []byte("first\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			looks := 0
			state := func() (bool, bool) {
				switch looks++; looks {
				case 1:
					return true, true
				case 2:
					return tc.end(t, dir, log)
				}
				return false, false
			}
			var out bytes.Buffer
			r := &logReader{path: log, state: state, every: time.Millisecond, w: &out, flush: func() {}}
			if err := r.send(t.Context(), -1, true); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("follower got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
