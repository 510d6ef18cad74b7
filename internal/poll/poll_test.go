package poll

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalTB records the first Fatalf and ends the goroutine, as testing does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func run(t *testing.T, within time.Duration, cond func() error) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(f, within, "the thing", cond)
	}()
	<-done
	return f.msg
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	msg := run(t, 5*time.Second, func() error {
		calls++
		return Check(calls >= 3, "only %d calls", calls)
	})
	if msg != "" || calls != 3 {
		t.Fatalf("failed with %q after %d calls, want success on the third", msg, calls)
	}
}

func TestEventuallyReportsWhatAndTheLastError(t *testing.T) {
	calls := 0
	msg := run(t, 50*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("attempt %d", calls)
	})
	want := fmt.Sprintf("waiting for the thing: attempt %d", calls)
	if calls < 2 || !strings.Contains(msg, want) || !strings.Contains(msg, "50ms") {
		t.Fatalf("message %q after %d calls, want it to end %q", msg, calls, want)
	}
}

func TestCheck(t *testing.T) {
	if err := Check(true, "unused"); err != nil {
		t.Fatal(err)
	}
	if err := Check(false, "%d left", 2); err == nil || err.Error() != "2 left" {
		t.Fatalf("Check(false) = %v", err)
	}
}

func TestInterval(t *testing.T) {
	for within, want := range map[time.Duration]time.Duration{
		time.Second: 10 * time.Millisecond, 10 * time.Second: 50 * time.Millisecond, time.Minute: 100 * time.Millisecond,
	} {
		if got := interval(within); got != want {
			t.Errorf("interval(%s) = %s, want %s", within, got, want)
		}
	}
}
