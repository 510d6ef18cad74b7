package httpapi

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Writes before expensive reads. On two shared cores, 2,000 read clients
// kept every expensive slot busy and made writes 14x slower than idle
// (docs/performance.md, "Load held"): a bound on how many expensive
// requests run at once does not bound their share of the CPU. So each
// server watches the latency of the writes that pass through it (applied
// here as leader, or forwarded to the leader) and gives expensive work a
// share of each slot's time: after a request held a slot for d, the slot
// rests d*(1/share - 1) before the next one may take it. When a window's
// median write latency rises past a multiple of the lowest median seen
// lately, the share halves (down to a floor, so reads still progress);
// otherwise it grows back a step per window (AIMD, as TCP does). A server
// that sees no writes has nothing to protect and gives reads all of it.

// Admission defaults; Config overrides them.
const (
	// DefaultWriteLatencyFactor is 1.3, not 2: the goal is the writes'
	// p99, which rises much faster than their median. In issue 21's load
	// test the median under load stayed within 1.7x of idle, so at 2 the
	// share hardly moved and the p99 was 52-71 ms (idle 10-12); at 1.3 it
	// was 32-33 ms, with about as many pages served in one of two runs
	// (docs/performance.md, "Load held").
	DefaultWriteLatencyFactor = 1.3
	defaultAdmitWindow        = 500 * time.Millisecond
	defaultMinShare           = 1.0 / 32
	defaultShareStep          = 1.0 / 16
	// floorWindows is how far back the lowest median reaches (a minute
	// at the default window): a disk that became slower for good raises
	// the floor after that long.
	floorWindows = 120
	// minTarget keeps a very fast disk's floor from turning scheduling
	// noise into a backoff.
	minTarget = 2 * time.Millisecond
	// maxRest bounds a slot's rest: a request that held its slot for
	// long mostly waited on a slow client, not on the CPU.
	maxRest = 4 * defaultAdmitWindow
)

// admission is the controller: observe feeds it write latencies, cooldown
// asks how long a slot rests after a request held it.
type admission struct {
	factor float64 // 0 turns the controller off: share stays 1
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	share   float64
	start   time.Time       // of the current window
	samples []time.Duration // write latencies in the current window
	medians []time.Duration // of the last floorWindows windows that had writes
}

func newAdmission(factor float64, window time.Duration, now func() time.Time) *admission {
	if now == nil {
		now = time.Now
	}
	return &admission{factor: factor, window: window, now: now, share: 1, start: now()}
}

// observe records one write's latency.
func (a *admission) observe(d time.Duration) {
	if a == nil || a.factor <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	a.samples = append(a.samples, d)
}

// cooldown is how long a slot rests after a request held it for busy.
func (a *admission) cooldown(busy time.Duration) time.Duration {
	if a == nil || a.factor <= 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	if a.share >= 1 {
		return 0
	}
	return min(maxRest, time.Duration(float64(busy)*(1/a.share-1)))
}

// Share is the fraction of each slot's time expensive work may use now.
func (a *admission) Share() float64 {
	if a == nil || a.factor <= 0 {
		return 1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	return a.share
}

// advance closes every window that has ended (the caller holds mu): the
// first with what it saw, the others (no writes in them) as quiet.
func (a *admission) advance() {
	now := a.now()
	for now.Sub(a.start) >= a.window {
		a.decide()
		a.start = a.start.Add(a.window)
		if now.Sub(a.start) >= 4*a.window {
			a.start = now // a long quiet spell: one step was enough
		}
	}
}

// decide adjusts the share from the window that ended.
func (a *admission) decide() {
	if len(a.samples) == 0 {
		a.share = min(1, a.share+defaultShareStep)
		return
	}
	slices.Sort(a.samples)
	median := a.samples[len(a.samples)/2]
	a.samples = a.samples[:0]
	a.medians = append(a.medians, median)
	if len(a.medians) > floorWindows {
		a.medians = a.medians[len(a.medians)-floorWindows:]
	}
	target := max(minTarget, time.Duration(a.factor*float64(slices.Min(a.medians))))
	if median > target {
		a.share = max(defaultMinShare, a.share/2)
		return
	}
	a.share = min(1, a.share+defaultShareStep)
}

// registerShare exports the share as a gauge, so an operator sees when
// reads are held back for writes.
func registerShare(reg prometheus.Registerer, a *admission) error {
	_, err := register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "amserver_http_expensive_share",
		Help: "Fraction of each expensive-request slot's time that expensive requests may use now: " +
			"1 unless the writes through this server slowed down (--http-expensive-yield).",
	}, a.Share))
	return err
}
