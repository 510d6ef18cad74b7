package worker

import (
	"strings"
	"testing"
)

// TestOOMNote: a container the OOM killer ended says so, with the job's
// limit; any other exit says nothing more than its code.
func TestOOMNote(t *testing.T) {
	cases := []struct {
		oom   bool
		limit int64
		want  string
	}{
		{false, 64, ""},
		{true, 64, "killed out of memory: the job's memoryLimitMiB is 64"},
		{true, 0, "killed out of memory: the job sets no memoryLimitMiB"},
	}
	for _, tc := range cases {
		got := failureMessage("service hog"+oomNote(tc.oom, tc.limit), exitSIGKILL, "allocated")
		if !strings.HasPrefix(got, "service hog") || !strings.Contains(got, "code 137") ||
			(tc.want == "") != !strings.Contains(got, "memory") || !strings.Contains(got, tc.want) {
			t.Errorf("oom %v limit %d: %q, want it to say %q", tc.oom, tc.limit, got, tc.want)
		}
	}
}
