package backoff

import (
	"context"
	"testing"
	"time"
)

// TestDelays: the delay doubles up to max, Reset goes back to min and
// Saturate jumps to max. A cancelled context makes Wait return at once, so
// the sequence is read without sleeping.
func TestDelays(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := New(time.Second, 5*time.Second)
	var got []time.Duration
	for range 5 {
		got = append(got, b.cur)
		b.Wait(ctx)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	b.Reset()
	if b.cur != time.Second {
		t.Fatalf("after Reset: %s", b.cur)
	}
	b.Saturate()
	if b.cur != 5*time.Second {
		t.Fatalf("after Saturate: %s", b.cur)
	}
}
