// Package fakeclock is a clock a test moves by hand, for code that reads
// the time through an injected Now (a func() time.Time or an interface
// with Now): expiry, leases and timers tested without waiting.
package fakeclock

import (
	"sync"
	"time"
)

// Clock starts at a fixed instant and moves only when told.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock at start.
func New(start time.Time) *Clock { return &Clock{t: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
