// Package backoff is the doubling wait between retries that the worker's
// loops and the leader's provisioner calls share.
package backoff

import (
	"context"
	"time"
)

// Backoff doubles its wait from Min up to Max; Reset starts over.
type Backoff struct {
	min, max, cur time.Duration
}

// New returns a backoff that waits min first and never more than max.
func New(min, max time.Duration) *Backoff { return &Backoff{min: min, max: max, cur: min} }

// Reset makes the next wait the shortest again.
func (b *Backoff) Reset() { b.cur = b.min }

// Slowest makes the next wait the longest: for failures that retrying
// soon will not change.
func (b *Backoff) Slowest() { b.cur = b.max }

// Wait waits the current interval (or until ctx ends) and doubles it.
func (b *Backoff) Wait(ctx context.Context) {
	t := time.NewTimer(b.cur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	b.cur = min(b.cur*2, b.max)
}
