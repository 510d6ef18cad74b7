package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
)

// The load test (make loadtest): no token holder can starve the cluster.
// Three servers run as processes of their own, loaded with bundles; then
// writes run alone (the idle figures), then with thousands of read-token
// clients (lists, event streams from index 0, blocking queries that the
// writes wake). It reports elections, the leader's resident set over its
// idle one, /v1/health p99 and write p99 against idle, each with its goal.

// LoadOptions size a load test.
type LoadOptions struct {
	Root         string // the repository (its cmd/amserver is built)
	Dir          string // scratch: binary, data, logs
	Servers      int
	Bundles      int
	Clients      int
	ReadTokens   int
	WriteRate    int // creates per second, in both phases
	Idle, Load   time.Duration
	TimeoutScale float64
	// ServerArgs are more flags for every server (--http-max-expensive 1).
	ServerArgs []string
	// ProfileDir, when set, receives CPU, heap and goroutine profiles of
	// every server, taken during the read load (load_profile.go).
	ProfileDir string
	Progress   func(format string, args ...any)
}

// Goals of the load test.
const (
	loadRSSGoal    = 256 << 20
	loadHealthGoal = 100 * time.Millisecond
	loadWriteRatio = 2.0
)

// RunLoad runs the load test and returns its rows.
func RunLoad(ctx context.Context, o LoadOptions) ([]Result, error) {
	bin, err := buildAmserver(ctx, o.Root, o.Dir)
	if err != nil {
		return nil, err
	}
	c, err := startLoadCluster(ctx, bin, o.Dir, o.Servers, o.ReadTokens, o.TimeoutScale, o.ServerArgs, o.ProfileDir != "")
	if c != nil {
		defer c.stop()
	}
	if err != nil {
		return nil, err
	}
	o.Progress("%d servers up; loading %d bundles", o.Servers, o.Bundles)
	start := time.Now()
	if err := loadBundles(ctx, c, o.Bundles); err != nil {
		return nil, err
	}
	o.Progress("loaded in %s", time.Since(start).Round(time.Second))
	leader, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	idle := runPhase(ctx, c, leader, o, 0)
	o.Progress("idle: write p99 %s, health p99 %s, leader RSS %.0f MiB", idle.writes.q(0.99), idle.health.q(0.99), mib(idle.rss))
	loaded := runPhase(ctx, c, leader, o, o.Clients)
	o.Progress("load: %d clients, %d pages, %d event lines, %d woken, %d turned away (429), %d failed",
		o.Clients, loaded.counts.pages.Load(), loaded.counts.eventLines.Load(), loaded.counts.woken.Load(),
		loaded.counts.tooMany.Load(), loaded.counts.failed.Load())
	// A second idle phase after the load: a baseline disturbed by
	// whatever followed the loading (one soak's idle p99 was 4x the
	// next run's) would hide a slowdown, so the quieter of the two counts.
	after := runPhase(ctx, c, leader, o, 0)
	o.Progress("idle again: write p99 %s", after.writes.q(0.99))
	if loaded.readersErr != nil {
		return loadResults(o, idle, loaded, after), fmt.Errorf("load: the readers' process: %w", loaded.readersErr)
	}
	return loadResults(o, idle, loaded, after), nil
}

// writeBaseline is the idle phase whose write p99 is lower.
func writeBaseline(before, after *phase) (*phase, string) {
	if after != nil && after.writes.n() > 0 && after.writes.q(0.99) < before.writes.q(0.99) {
		return after, "after"
	}
	return before, "before"
}

// phase is what one phase measured.
type phase struct {
	writes, health latencies
	rss, peak      uint64        // the leader's resident set: median and highest
	peakAt         time.Duration // when the highest was sampled, from the phase's start
	elections      uint64
	leaderChanges  int
	alarms         gossipAlarms // suspicions and dead declarations of live members
	alarmsErr      error        // the counters could not be read: the figure is unknown
	counts         loadCounts
	took           time.Duration
	atLeader       serverWrites // the creates as the leader timed them
	shares         shareSamples // the servers' expensive-request share
	sharesNote     string
	readersErr     error // the readers' process failed: the load was not what it says
}

// runPhase runs writes (and clients readers, when > 0) for the phase's
// time, sampling the leader's RSS and health, and the Raft term.
func runPhase(ctx context.Context, c *loadCluster, leader *loadServer, o LoadOptions, clients int) *phase {
	p := &phase{}
	d := o.Idle
	if clients > 0 {
		d = o.Load
	}
	term0, _ := c.term(ctx)
	alarms0, err0 := c.alarms(ctx)
	writes0, _ := scrapeServerWrites(ctx, leader, c.mgmt)
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	var readers func() error
	if clients > 0 {
		var err error
		if readers, err = startReaderProcess(ctx, c, clients, d, &p.counts); err != nil {
			p.readersErr = err
		}
	}
	prefix := "idle"
	if clients > 0 {
		prefix = "load"
	}
	wg.Go(func() { writer(pctx, c, o.WriteRate, prefix, &p.writes) })
	wg.Go(func() { prober(pctx, leader, 50*time.Millisecond, &p.health) })
	if clients > 0 && o.ProfileDir != "" {
		wg.Go(func() { takeProfiles(pctx, c, leader, d, o.ProfileDir, o.Progress) })
	}
	var samples []rssSample
	var changes atomic.Int64
	wg.Go(func() { samples = sampleLeader(pctx, c, leader, &changes) })
	wg.Go(func() { sampleShares(pctx, c, &p.shares) })
	start := time.Now()
	wg.Wait()
	if readers != nil {
		p.readersErr = readers()
	}
	p.took = time.Since(start)
	term1, _ := c.term(ctx)
	alarms1, err1 := c.alarms(ctx)
	p.alarms, p.alarmsErr = alarms1.since(alarms0), errors.Join(err0, err1)
	p.sharesNote = p.shares.String(c, leader)
	if writes1, err := scrapeServerWrites(ctx, leader, c.mgmt); err == nil {
		p.atLeader = writes1.since(writes0)
	}
	p.elections, p.leaderChanges = term1-min(term0, term1), int(changes.Load())
	p.rss, p.peak, p.peakAt = summarizeRSS(samples)
	return p
}

// sampleLeader samples the leader's RSS twice a second and counts the
// times the first server names a new leader.
func sampleLeader(ctx context.Context, c *loadCluster, leader *loadServer, changes *atomic.Int64) []rssSample {
	var out []rssSample
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	current := leader
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		out = append(out, rssSample{at: time.Since(start), rss: leader.rss()})
		if l, err := c.leader(ctx); err == nil && l != current {
			changes.Add(1)
			current = l
		}
	}
}

// rssSample is one reading of the leader's resident set.
type rssSample struct {
	at  time.Duration
	rss uint64
}

// summarizeRSS returns the median and highest reading and when the
// highest was taken (the first, if it repeats).
func summarizeRSS(s []rssSample) (median, peak uint64, peakAt time.Duration) {
	if len(s) == 0 {
		return 0, 0, 0
	}
	vals := make([]uint64, len(s))
	for i, x := range s {
		vals[i] = x.rss
		if x.rss > peak {
			peak, peakAt = x.rss, x.at
		}
	}
	slices.Sort(vals)
	return vals[len(vals)/2], peak, peakAt
}

func (l *latencies) q(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// over counts the samples longer than d.
func (l *latencies) over(d time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.d {
		if x > d {
			n++
		}
	}
	return n
}

func (l *latencies) n() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// loadSpec is a loaded bundle: one small job, starting in 2099, so it is
// listed, encoded and streamed like any other but never placed (there are
// no workers to place it on).
func loadSpec(id string) api.BundleSpec {
	return api.BundleSpec{ID: id, Pool: "default", StartAt: "2099-01-01T00:00:00Z",
		Tags: map[string]string{"team": "video", "channel": id},
		Jobs: []api.Job{{Name: "enc", Requirements: api.Requirements{Capacity: 1}},
			{Name: "mux", Requirements: api.Requirements{Capacity: 0.5}, CoLocateWith: []string{"enc"}}}}
}

// loadBundles creates n bundles, 64 at a time over every server.
func loadBundles(ctx context.Context, c *loadCluster, n int) error {
	mgmt := c.client(c.servers[0], c.mgmt)
	if _, err := mgmt.PutPool(ctx, api.Pool{Name: "default"}); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	var (
		next   atomic.Int64
		failed atomic.Int64
		first  atomic.Value
		wg     sync.WaitGroup
	)
	for w := range 64 {
		cl := c.client(c.servers[w%len(c.servers)], c.mgmt)
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if _, err := cl.CreateBundle(ctx, loadSpec(fmt.Sprintf("bulk-%07d", i))); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > int64(n)/100 {
		return fmt.Errorf("%d of %d creates failed, first: %v", f, n, first.Load())
	}
	return ctx.Err()
}

func loadResults(o LoadOptions, idle, loaded, after *phase) []Result {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rise := loaded.peak - min(loaded.peak, idle.rss)
	base, which := writeBaseline(idle, after)
	ratio := ms(loaded.writes.q(0.99)) / max(ms(base.writes.q(0.99)), 0.001)
	afterP99 := "not run"
	if after != nil {
		afterP99 = fmt.Sprintf("%.1f ms", ms(after.writes.q(0.99)))
	}
	total := loaded.counts.pages.Load() + loaded.counts.tooMany.Load()
	name := func(s string) string { return fmt.Sprintf("%s, %d clients, %d bundles", s, o.Clients, o.Bundles) }
	return []Result{
		{Suite: "load", Name: name("elections during the load"), Value: float64(loaded.elections), Unit: "elections",
			Target: "0", Met: Met(loaded.elections == 0 && loaded.leaderChanges == 0),
			Note: fmt.Sprintf("Raft term rise; the leader changed %d times (%d elections while idle)", loaded.leaderChanges, idle.elections)},
		alarmRow(name("live members declared down"), loaded, idle),
		{Suite: "load", Name: name("leader RSS over idle"), Value: mib(rise), Unit: "MiB", Target: "<= 256 MiB",
			Met: Met(rise <= loadRSSGoal), Note: fmt.Sprintf("idle %.0f MiB, peak %.0f MiB under load (%.0f s into it; median %.0f MiB)",
				mib(idle.rss), mib(loaded.peak), loaded.peakAt.Seconds(), mib(loaded.rss))},
		{Suite: "load", Name: name("/v1/health p99 at the leader"), Value: ms(loaded.health.q(0.99)), Unit: "ms", Target: "<= 100 ms",
			Met:  Met(loaded.health.q(0.99) <= loadHealthGoal && loaded.health.failed == 0),
			Note: fmt.Sprintf("every 50 ms; idle p99 %.1f ms; %d failed", ms(idle.health.q(0.99)), loaded.health.failed)},
		{Suite: "load", Name: name("write p99 under load / idle"), Value: ratio, Unit: "ratio", Target: "<= 2x",
			Met: Met(ratio <= loadWriteRatio),
			Note: fmt.Sprintf("creates at %d/s: p99 %.1f ms under load, %.1f ms idle %s it (p50 %.1f / %.1f; idle before %.1f ms, after %s); %d and %d failed; "+
				"over 100 ms: %d of %d under load and %d of %d idle at the clients, %.0f of %.0f and %.0f of %.0f at the leader",
				o.WriteRate, ms(loaded.writes.q(0.99)), ms(base.writes.q(0.99)), which, ms(loaded.writes.q(0.5)), ms(base.writes.q(0.5)),
				ms(idle.writes.q(0.99)), afterP99,
				loaded.writes.failed, base.writes.failed, loaded.writes.over(100*time.Millisecond), loaded.writes.n(),
				base.writes.over(100*time.Millisecond), base.writes.n(),
				loaded.atLeader.slow, loaded.atLeader.total, base.atLeader.slow, base.atLeader.total)},
		{Suite: "load", Name: name("reads served"), Value: float64(loaded.counts.pages.Load()) / loaded.took.Seconds(), Unit: "pages/s",
			Note: fmt.Sprintf("%.0f MiB received, %d event lines, %d blocking queries woken, %d failed; expensive share: %s",
				float64(loaded.counts.bytes.Load())/(1<<20), loaded.counts.eventLines.Load(), loaded.counts.woken.Load(), loaded.counts.failed.Load(),
				loaded.sharesNote)},
		{Suite: "load", Name: name("reads turned away (429)"), Value: 100 * float64(loaded.counts.tooMany.Load()) / float64(max(total, 1)), Unit: "%",
			Note: fmt.Sprintf("%d of %d list and stream requests; the clients waited Retry-After and came back", loaded.counts.tooMany.Load(), total)},
	}
}

// LoadScratch makes the load test's scratch directory.
func LoadScratch() (string, func(), error) {
	dir, err := os.MkdirTemp("", "amload-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// alarmRow is the false node-down row: members declared dead while nothing
// was killed, goal 0; suspicions (refuted in time) go in the note.
func alarmRow(name string, loaded, idle *phase) Result {
	r := Result{Suite: "load", Name: name, Value: loaded.alarms.dead, Unit: "declarations", Target: "0",
		Met: Met(loaded.alarms.dead == 0 && loaded.alarmsErr == nil),
		Note: fmt.Sprintf("gossip, summed over servers: %.0f suspicions under load; %.0f declared down and %.0f suspicions while idle",
			loaded.alarms.suspect, idle.alarms.dead, idle.alarms.suspect)}
	if err := errors.Join(loaded.alarmsErr, idle.alarmsErr); err != nil {
		r.Note = "counters unreadable: " + err.Error()
	}
	return r
}
