// Package poll is the one way tests wait: Eventually checks a condition on
// a ticker until it holds or the time is up, and then says what it waited
// for and why the condition last failed. It imports nothing of amserver,
// so the tests of every package can use it, internal tests of the packages
// that agent (and so internal/testcluster) imports included; a sleep in a
// test is then left for tests that measure time or let it pass on purpose.
package poll

import (
	"fmt"
	"testing"
	"time"
)

// Eventually calls cond at once and then on every tick until it returns
// nil, and fails the test if it has not within the given time. cond runs
// on the caller's goroutine, so it may call t.Fatal itself. It works in
// cleanups too: it does not watch t.Context, which ends before them.
func Eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	err := cond()
	if err == nil {
		return
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(interval(within))
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s: %v", within, what, err)
		case <-tick.C:
			if err = cond(); err == nil {
				return
			}
		}
	}
}

// interval polls a few hundred times over the wait, between 10 ms (a
// short wait stays responsive) and 100 ms (a condition that calls the API
// does not load a machine shared by the other tests).
func interval(within time.Duration) time.Duration {
	return min(max(within/200, 10*time.Millisecond), 100*time.Millisecond)
}

// Check turns a boolean condition into the error Eventually reports: nil
// when ok, else the message formatted from the rest.
func Check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}
