package sim

import (
	"math/rand/v2"
	"sync"
	"time"
)

// workClock is the leader clock of a simulated server, and stands for the
// time a leader's work takes. On the bubble's clock computation is free: a
// plan would reach Raft in the very instant of the state it was computed
// on, and nothing could commit in between. Real leaders take time, and other
// commands commit meanwhile; the FSM's re-check of every plan exists for
// those (the squeeze fault). The leader reads its clock between reading
// the state and proposing what it decided, so each read here costs a short
// random while.
type workClock struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// maxWork bounds one read's cost: well under the Raft and gossip timeouts
// of a simulated cluster (100 ms), so it models work, not a stall.
const maxWork = 4 * time.Millisecond

func newWorkClock(seed uint64) *workClock {
	return &workClock{rng: rand.New(rand.NewPCG(seed, 0xc10c))}
}

// Now waits for the work's cost and then reads the bubble's clock.
func (c *workClock) Now() time.Time {
	c.mu.Lock()
	d := time.Duration(c.rng.Int64N(int64(maxWork)))
	c.mu.Unlock()
	time.Sleep(d)
	return time.Now()
}
