package worker

import (
	"testing"
	"time"

	"github.com/amserver/amserver/internal/fakeclock"
)

// TestRestartPolicy: the delays before restarts double from 1 s up to
// 30 s and start over after a run of a minute; a first run reads running
// at once, a run after an end only once it has stayed up 5 s. Each step is
// what happened (start, end, or the clock moving) and what the policy must
// say then.
func TestRestartPolicy(t *testing.T) {
	type step struct {
		do      string        // "start", "end" (want is the delay) or "wait" (advance the clock)
		advance time.Duration // for wait: how long passes
		want    time.Duration // for end: the delay before the next start
		until   time.Duration // after the step: untilRunning
	}
	crash := func(delay time.Duration) []step {
		return []step{{do: "start", until: 5 * time.Second}, {do: "wait", advance: time.Second, until: 4 * time.Second},
			{do: "end", want: delay, until: 5 * time.Second}}
	}
	var loop []step
	for _, d := range []time.Duration{2, 4, 8, 16, 30, 30} {
		loop = append(loop, crash(d*time.Second)...)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a first run is running at once", []step{{do: "start"}, {do: "wait", advance: time.Hour}}},
		{"a crash loop backs off up to 30 s", append([]step{{do: "start"}, {do: "end", want: time.Second, until: 5 * time.Second}}, loop...)},
		{"a restarted run reads running after 5 s", []step{
			{do: "start"}, {do: "end", want: time.Second, until: 5 * time.Second},
			{do: "start", until: 5 * time.Second}, {do: "wait", advance: 4999 * time.Millisecond, until: time.Millisecond},
			{do: "wait", advance: time.Millisecond}, {do: "wait", advance: time.Hour},
		}},
		{"a run of a minute resets the backoff", []step{
			{do: "start"}, {do: "end", want: time.Second, until: 5 * time.Second},
			{do: "start", until: 5 * time.Second}, {do: "end", want: 2 * time.Second, until: 5 * time.Second},
			{do: "start", until: 5 * time.Second}, {do: "end", want: 4 * time.Second, until: 5 * time.Second},
			{do: "start", until: 5 * time.Second}, {do: "wait", advance: 59 * time.Second},
			{do: "end", want: 8 * time.Second, until: 5 * time.Second},
			{do: "start", until: 5 * time.Second}, {do: "wait", advance: time.Minute},
			{do: "end", want: time.Second, until: 5 * time.Second},
		}},
		{"an adopted run's length is unknown: no reset", []step{
			{do: "wait", advance: time.Hour}, {do: "end", want: time.Second, until: 5 * time.Second},
			{do: "wait", advance: time.Hour, until: 5 * time.Second}, {do: "end", want: 2 * time.Second, until: 5 * time.Second},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New(time.Unix(1_700_000_000, 0))
			p := newRestartPolicy(clock.Now, defaultStableAfter)
			for i, s := range tc.steps {
				switch s.do {
				case "start":
					p.started()
				case "wait":
					clock.Advance(s.advance)
				case "end":
					if got := p.ended(); got != s.want {
						t.Fatalf("step %d: delay %s, want %s", i, got, s.want)
					}
				}
				if got := p.untilRunning(); got != s.until {
					t.Fatalf("step %d (%s): untilRunning %s, want %s", i, s.do, got, s.until)
				}
			}
		})
	}
}
