// Package backoff is the capped exponential delay that the server's
// provisioner calls and the worker's loops share between retries.
package backoff

import (
	"context"
	"time"
)

// Backoff is a capped exponential delay; not safe for concurrent use (each
// retry loop owns its own).
type Backoff struct {
	min, max, cur time.Duration
}

// New starts at min and doubles up to max.
func New(min, max time.Duration) *Backoff { return &Backoff{min: min, max: max, cur: min} }

// Reset brings the next delay back to min, after a success.
func (b *Backoff) Reset() { b.cur = b.min }

// Saturate makes the next delay max: a failure that retrying soon will not
// fix.
func (b *Backoff) Saturate() { b.cur = b.max }

// Wait sleeps for the current delay, or until ctx ends, then doubles it.
func (b *Backoff) Wait(ctx context.Context) {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Next returns the current delay and doubles it, for a caller that does
// its own waiting (on a timer of its own, or a scan that comes round).
func (b *Backoff) Next() time.Duration {
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	return d
}
