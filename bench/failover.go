package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
)

func init() { Suites["failover"] = runFailover }

// Failover targets (issue 21; issue 7 asked for 3 s and 2 s).
const (
	foWorkerTarget = time.Second
	foLeaderTarget = time.Second
)

// FailoverPlan says how the failover suite measures. The zero value of each
// field means the suite's default.
type FailoverPlan struct {
	Trials  int            // default 20 (5 quick)
	Servers int            // default 3
	Workers int            // default 4
	Gossip  *gossip.Config // default gossip.DefaultConfig(), as deployed
}

func runFailover(ctx context.Context, o Options) ([]Result, error) {
	return MeasureFailover(ctx, o, FailoverPlan{})
}

// MeasureFailover runs the trials of plan. Each trial starts a fresh
// cluster, kills the primary worker of a resilient bundle, then kills the
// Raft leader, and times what a user and the backup worker see.
func MeasureFailover(ctx context.Context, o Options, plan FailoverPlan) ([]Result, error) {
	plan = plan.withDefaults(o.Quick)
	topo := foTopology{servers: plan.Servers, workers: plan.Workers, gossip: *plan.Gossip}
	// Seven members per trial log a lot at info; only -v (debug) wants it.
	clusterLog := slog.New(slog.DiscardHandler)
	if o.Logger == nil {
		o.Logger = clusterLog
	} else if o.Logger.Enabled(ctx, slog.LevelDebug) {
		clusterLog = o.Logger
	}
	var samples []foSample
	for i := range plan.Trials {
		dir := filepath.Join(o.Dir, fmt.Sprintf("failover-%d", i))
		s, err := foTrial(ctx, clusterLog, dir, topo)
		if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
			err = fmt.Errorf("remove trial data: %w", rmErr)
		}
		if err != nil {
			return foResults(plan, samples), fmt.Errorf("failover trial %d: %w", i+1, err)
		}
		o.Logger.Info("failover trial", "trial", i+1, "workerKillPromoted", s.promoted.Round(time.Millisecond),
			"deadAtLeader", s.detect.Round(time.Millisecond), "leaderKillAcked", s.acked.Round(time.Millisecond),
			"elected", s.elected.Round(time.Millisecond))
		samples = append(samples, s)
	}
	return foResults(plan, samples), nil
}

func (p FailoverPlan) withDefaults(quick bool) FailoverPlan {
	if p.Trials <= 0 {
		p.Trials = 20
		if quick {
			p.Trials = 5
		}
	}
	if p.Servers <= 0 {
		p.Servers = 3
	}
	if p.Workers <= 0 {
		p.Workers = 4
	}
	if p.Gossip == nil {
		gc := gossip.DefaultConfig()
		p.Gossip = &gc
	}
	return p
}

// foSample is one trial's timings, each from the kill it follows.
type foSample struct {
	detect   time.Duration // worker kill → the leader's gossip reports it dead
	promoted time.Duration // worker kill → the bundle's epoch rose (backup promoted in Raft)
	told     time.Duration // worker kill → the backup worker is told to run as primary
	elected  time.Duration // leader kill → a surviving server leads
	acked    time.Duration // leader kill → first acknowledged write through a survivor
}

func foTrial(ctx context.Context, logger *slog.Logger, dir string, topo foTopology) (foSample, error) {
	var s foSample
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := startFoCluster(ctx, dir, topo, logger)
	if err != nil {
		return s, err
	}
	// Members die as a crash would; what they report on the way down is moot.
	defer func() { _ = c.kill() }()
	leader, err := c.ready(ctx, 60*time.Second)
	if err != nil {
		return s, err
	}
	if err := c.workerKill(ctx, leader, &s); err != nil {
		return s, fmt.Errorf("worker kill: %w", err)
	}
	if err := c.leaderKill(ctx, leader, &s); err != nil {
		return s, fmt.Errorf("leader kill: %w", err)
	}
	return s, nil
}

// workerKill places a bundle with a backup, kills its primary worker and
// waits for the promotion in Raft and on the backup worker.
func (c *foCluster) workerKill(ctx context.Context, leader *agent.Server, s *foSample) error {
	cl, err := api.New(leader.HTTPAddr())
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	b, index, err := foPlaceResilient(ctx, cl)
	if err != nil {
		return err
	}
	primary, backup := foReplicaNode(b, api.RolePrimary), foReplicaNode(b, api.RoleBackup)
	victim, driver := c.workers[primary], c.drivers[backup]
	if victim == nil || driver == nil {
		return fmt.Errorf("bundle %s placed on unknown workers %q and %q", b.ID, primary, backup)
	}
	start := time.Now()
	defer foKill(victim.Kill)()
	promotedAt, err := foWaitEpoch(ctx, cl, b.ID, b.Epoch, index)
	if err != nil {
		return err
	}
	toldAt, err := driver.waitPrimary(ctx, b.ID, b.Epoch+1)
	if err != nil {
		return err
	}
	s.promoted, s.told = promotedAt.Sub(start), toldAt.Sub(start)
	s.detect = -1
	if m, ok := leader.Gossip().Member(primary); ok && m.Status == gossip.StatusDead {
		s.detect = m.Since.Sub(start)
	}
	return nil
}

// foKill starts kill aside and returns a wait for it. An in-process kill
// stops gossip and Raft at once but then waits for the HTTP server's
// shutdown grace (requests blocked on a Raft that is gone can hold it for
// seconds), which a crash would not: the clock must not wait for it.
func foKill(kill func() error) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = kill() // a crash: whatever it reports on the way down is moot
	}()
	return func() { <-done }
}

// foPlaceResilient creates a one-job bundle with a backup on another node
// and waits until both replicas are placed.
func foPlaceResilient(ctx context.Context, cl *api.Client) (*api.Bundle, uint64, error) {
	spec := api.BundleSpec{
		ID: "fo", Pool: foPool, Resilience: &api.Resilience{SameNode: api.Forbid},
		Jobs: []api.Job{{Name: "encoder", Requirements: api.Requirements{Capacity: 1}}},
	}
	if _, err := cl.CreateBundle(ctx, spec); err != nil {
		return nil, 0, fmt.Errorf("create bundle: %w", err)
	}
	var index uint64
	for {
		b, meta, err := cl.Bundle(ctx, spec.ID, &api.QueryOptions{Index: index, Wait: 10 * time.Second})
		if err != nil {
			return nil, 0, fmt.Errorf("wait for placement: %w", err)
		}
		if b.State == api.StatePlaced && foReplicaNode(b, api.RoleBackup) != "" {
			return b, meta.Index, nil
		}
		index = meta.Index
	}
}

func foReplicaNode(b *api.Bundle, role string) string {
	for _, r := range b.Replicas {
		if r.Role == role && len(r.Jobs) > 0 {
			return r.Jobs[0].NodeID
		}
	}
	return ""
}

// foWaitEpoch follows the bundle with blocking queries on the leader (its
// own applied state) until its epoch passes epoch.
func foWaitEpoch(ctx context.Context, cl *api.Client, id string, epoch, index uint64) (time.Time, error) {
	for {
		b, meta, err := cl.Bundle(ctx, id, &api.QueryOptions{Stale: true, Index: index, Wait: 10 * time.Second})
		if err != nil {
			return time.Time{}, fmt.Errorf("wait for promotion: %w", err)
		}
		if b.Epoch > epoch {
			return time.Now(), nil
		}
		index = meta.Index
	}
}

// leaderKill kills the Raft leader and times the first write a client of a
// surviving server gets acknowledged, retrying as the api client does.
func (c *foCluster) leaderKill(ctx context.Context, leader *agent.Server, s *foSample) error {
	if len(c.servers) < 3 {
		return errors.New("a leader kill needs at least 3 servers")
	}
	survivor := c.servers[0]
	if survivor == leader {
		survivor = c.servers[1]
	}
	cl, err := api.New(survivor.HTTPAddr())
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if _, err := cl.PutPool(ctx, api.Pool{Name: "before-kill"}); err != nil {
		return fmt.Errorf("write before the kill: %w", err)
	}
	elected := c.watchElection(ctx, leader)
	start := time.Now()
	defer foKill(leader.Kill)()
	// A write sent before the kill reached Raft could still be acknowledged
	// by the old leader, which no crash allows: write once it has stopped
	// leading (the clock runs from the kill, so this only adds to it).
	if err := foWaitDeposed(ctx, leader); err != nil {
		return err
	}
	ackedAt, err := foFirstWrite(ctx, cl)
	if err != nil {
		return err
	}
	s.acked = ackedAt.Sub(start)
	s.elected = -1
	if at, ok := <-elected; ok {
		s.elected = at.Sub(start)
	}
	return nil
}

// foWaitDeposed returns once old no longer believes it leads.
func foWaitDeposed(ctx context.Context, old *agent.Server) error {
	for old.Store().IsLeader() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the killed leader kept leading: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// watchElection reports when a server other than old first claims the
// leadership. It polls Raft's state every 2 ms, which is finer than what
// is measured.
func (c *foCluster) watchElection(ctx context.Context, old *agent.Server) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			if c.leader(old) != nil {
				out <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return out
}

// foFirstWrite writes until one write is acknowledged. Each call is the api
// client's own (it retries noLeader answers); other failures, such as an
// unknown outcome, are retried here at once.
func foFirstWrite(ctx context.Context, cl *api.Client) (time.Time, error) {
	for i := 0; ; i++ {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cl.PutPool(wctx, api.Pool{Name: fmt.Sprintf("after-kill-%d", i)})
		cancel()
		if err == nil {
			return time.Now(), nil
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("no write acknowledged after the leader died: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// foResults turns samples into rows: p50 and p99 (nearest rank, so with 20
// trials p99 is the slowest) of each measurement.
func foResults(plan FailoverPlan, samples []foSample) []Result {
	if len(samples) == 0 {
		return nil
	}
	g := plan.Gossip
	note := fmt.Sprintf("%d trials, %d servers + %d workers on loopback; gossip probe %s/%s, suspicion ×%d (max ×%d)",
		len(samples), plan.Servers, plan.Workers, g.ProbeInterval, g.ProbeTimeout, g.SuspicionMult, g.SuspicionMaxMult)
	pick := func(f func(foSample) time.Duration) []time.Duration {
		var out []time.Duration
		for _, s := range samples {
			if d := f(s); d >= 0 {
				out = append(out, d)
			}
		}
		return out
	}
	var rs []Result
	add := func(name string, ds []time.Duration, target time.Duration) {
		rs = append(rs, foRows(name, ds, target, note)...)
	}
	add("worker kill → backup promoted", pick(func(s foSample) time.Duration { return s.promoted }), foWorkerTarget)
	add("worker kill → dead in leader's gossip", pick(func(s foSample) time.Duration { return s.detect }), 0)
	add("worker kill → backup worker told", pick(func(s foSample) time.Duration { return s.told }), 0)
	add("leader kill → first acknowledged write", pick(func(s foSample) time.Duration { return s.acked }), foLeaderTarget)
	add("leader kill → new leader", pick(func(s foSample) time.Duration { return s.elected }), 0)
	return rs
}

// foRows is the p50 and p99 rows of one measurement; only p99 carries the
// target, when there is one.
func foRows(name string, ds []time.Duration, target time.Duration, note string) []Result {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p50, p99 := foPercentile(ds, 0.50), foPercentile(ds, 0.99)
	rows := []Result{
		{Suite: "failover", Name: name + " p50", Value: ms(p50), Unit: "ms", Note: note},
		{Suite: "failover", Name: name + " p99", Value: ms(p99), Unit: "ms", Note: fmt.Sprintf("max %.0f ms", ms(ds[len(ds)-1]))},
	}
	if target > 0 {
		rows[1].Target = fmt.Sprintf("<= %d ms", target.Milliseconds())
		rows[1].Met = Met(p99 <= target)
	}
	return rows
}

// foPercentile is the nearest-rank percentile of sorted ds.
func foPercentile(ds []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
