// Package sim is amserver's in-process randomized fault simulation: real
// servers and workers on raft's in-memory transport and an in-memory gossip
// network, faults drawn from a seed, and the fault suite's checkers. It is
// fast enough to run a thousand schedules in CI; a failure names its seed.
//
// Each seed runs inside a testing/synctest bubble: Raft, gossip and HTTP
// all travel over in-memory networks, and time is the bubble's virtual
// clock, which moves only when every goroutine of the seed waits. Timeouts,
// election deadlines and the convergence limit are therefore counted in what
// the cluster can do, not in how busy the machine is: a seed gives the same
// verdict alone or among many, on a loaded machine or an idle one.
//
// A seed fixes the cluster size, the fault schedule and every client's
// choice of operations; the virtual clock fixes when each timer fires. It
// does not fix the order in which runnable goroutines interleave, so a
// replay reruns the same schedule on the same clock, not the very same
// execution.
package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/check"
	"github.com/amserver/amserver/e2e/workload"
)

// ConvergeWithin is how soon after the last heal every bundle must be placed
// and every server hold the same state.
const ConvergeWithin = 10 * time.Second

// Minimums is what every seed must get done, faults and all; the least
// any of 1,000 seeds did was several times more (make sim prints it).
var Minimums = check.Minimums{Reads: 30, Writes: 15, Creates: 8, Samples: 15}

// drainTime is how long, on the virtual clock, a stopped seed waits for
// its members' last timers.
const drainTime = time.Minute

// Options shape one simulated run.
type Options struct {
	Seed int64
	// Servers is 3 or 5; zero draws it from the seed (mostly 3).
	Servers int
	Workers int // default 3
	// Duration is how long clients run; faults happen inside it.
	Duration time.Duration
	// Faults limits the kinds drawn from (default: all that fit the size).
	Faults []string
	// TimeoutScale multiplies Raft's LAN timeouts (default 0.4: 100 ms).
	TimeoutScale float64
	Logger       *slog.Logger
	// ClientsFail aims every client and sampler at an address where
	// nothing listens: the planted case the checkers must not pass.
	ClientsFail bool
}

// Outcome is one seed's verdict with what is needed to understand it.
type Outcome struct {
	Report  check.Report
	Faults  []string
	History *workload.History
	Viz     []byte // porcupine's visualization when linearizability failed
	// Done is what the seed got done (check.Done), kept after the history
	// of a passing seed is dropped.
	Done check.Minimums
}

func (o *Options) defaults(rng *rand.Rand) {
	if o.Servers == 0 {
		o.Servers = 3
		if rng.IntN(4) == 0 {
			o.Servers = 5
		}
	}
	if o.Workers == 0 {
		o.Workers = 3
	}
	if o.Duration == 0 {
		o.Duration = 1500 * time.Millisecond
	}
	if o.TimeoutScale == 0 {
		o.TimeoutScale = 0.4
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if len(o.Faults) == 0 {
		o.Faults = Faults3
		if o.Servers >= 5 {
			o.Faults = Faults5
		}
	}
}

// Run simulates one seed: bring up, load, faults, heal, check.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xa5e5))
	o.defaults(rng)
	c, err := newCluster(o.Logger, uint64(o.Seed), o.Servers, o.Workers, o.TimeoutScale)
	if err != nil {
		return nil, err
	}
	defer func() {
		c.stop()
		// Stopped members leave timers behind (memberlist's probe waits out
		// its ack timeout after Shutdown); on the bubble's clock a minute
		// passes at once and lets every one of them finish, so that what is
		// still blocked when the seed returns is a leak.
		time.Sleep(drainTime)
	}()
	c.acl = o.Seed%aclEvery == 0
	if err := c.up(ctx); err != nil {
		return nil, err
	}
	wcfg := workload.Config{
		Servers: c.clientAddrs(), Clients: o.Servers + 1, Keys: 2, Pool: Pool, Seed: o.Seed,
		OpTimeout: time.Second, Think: 30 * time.Millisecond, CreateCapacity: 0.05,
		MaxCreates: 80, Backup: true, SampleEvery: 100 * time.Millisecond,
		ClientOptions: c.clientOptions(),
	}
	setupCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	if err := workload.Setup(setupCtx, wcfg); err != nil {
		return nil, fmt.Errorf("seed %d: workload setup: %w", o.Seed, err)
	}
	if o.ClientsFail {
		wcfg.Servers = []string{"10.77.9.9:7070"} // nothing listens on the memNet there
	}
	out := &Outcome{History: workload.NewHistory()}
	started := time.Now()
	out.Faults = c.runFaults(ctx, o, rng, wcfg, out.History)
	if err := c.healAll(ctx); err != nil {
		return nil, fmt.Errorf("seed %d: heal: %w", o.Seed, err)
	}
	c.check(ctx, o, out, started)
	return out, nil
}

// up starts the servers, waits for a leader, then starts the workers.
func (c *cluster) up(ctx context.Context) error {
	for _, s := range c.servers {
		if err := c.startServer(ctx, s); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	if err := c.waitLeader(wctx); err != nil {
		return err
	}
	for _, w := range c.workers {
		if err := c.startWorker(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// runFaults runs the clients and the sampler for the whole duration while
// one or two fault windows open and close inside it.
func (c *cluster) runFaults(ctx context.Context, o Options, rng *rand.Rand, wcfg workload.Config, h *workload.History) []string {
	runCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = workload.Run(runCtx, wcfg, h) }()
	go func() { defer wg.Done(); workload.RunSampler(runCtx, wcfg, h) }()
	var faults []string
	windows := 1 + rng.IntN(2)
	slot := o.Duration / time.Duration(windows)
	for w := range windows {
		kind := o.Faults[rng.IntN(len(o.Faults))]
		begin := time.Duration(float64(slot) * (0.1 + 0.3*rng.Float64()))
		hold := time.Duration(float64(slot) * (0.3 + 0.3*rng.Float64()))
		if !workload.Sleep(runCtx, begin) {
			break
		}
		desc, heal := c.inject(ctx, kind, rng)
		faults = append(faults, fmt.Sprintf("%s@%dms+%dms", desc, (time.Duration(w)*slot+begin).Milliseconds(), hold.Milliseconds()))
		workload.Sleep(runCtx, hold)
		if err := heal(ctx); err != nil {
			faults = append(faults, "heal failed: "+err.Error())
		}
		workload.Sleep(runCtx, slot-begin-hold)
	}
	wg.Wait()
	return faults
}

// check runs every checker that needs the healed cluster; the
// linearizability check, which needs none, runs later (Linearizability).
func (c *cluster) check(ctx context.Context, o Options, out *Outcome, started time.Time) {
	ops := out.History.Ops()
	out.Report = check.NewReport("sim", o.Seed, out.History, 0)
	r := &out.Report
	out.Done = check.Done(ops, out.History.Samples())
	r.Add(check.Evidence(ops, out.History.Samples(), Minimums))
	r.Add(check.MonotonicIndex(ops))
	r.Add(check.Placement(out.History.Samples()))
	r.Add(check.Converge(ctx, c.clientAddrs(), ConvergeWithin, c.clientOptions()...))
	if final := c.finalBundles(ctx); final != nil {
		r.Add(check.UniqueCreates(ops, final))
	} else {
		// Still a failure, but named for what it is: the cluster did not
		// answer, which says nothing yet about lost creates.
		r.Add(check.Result{Name: "unique-creates", Count: 1,
			Violations: []string{"final bundle list unreadable: no server answered a linearizable read within 10s"}})
	}
	r.Duration = time.Since(started).Round(time.Millisecond).String()
}

// Linearizability checks the history with porcupine. It runs outside the
// seed's bubble: inside, virtual time stands still while the checker
// computes, so its real-time limit could never fire.
func (o *Outcome) Linearizability() {
	if o.History == nil {
		return
	}
	lin, viz := check.Linearizable(o.History.Ops(), 10*time.Second)
	o.Report.Add(lin)
	o.Viz = viz
}

// finalBundles reads every bundle linearizably from whichever server
// answers; nil when none does.
func (c *cluster) finalBundles(ctx context.Context) []api.Bundle {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		for _, addr := range c.clientAddrs() {
			cl, err := c.client(addr)
			if err != nil {
				continue
			}
			if bs, _, err := cl.Bundles(ctx, api.BundleFilter{}, nil); err == nil {
				return bs
			}
		}
		workload.Sleep(ctx, 50*time.Millisecond)
	}
	return nil
}

// Summary is one line naming the seed, its faults and its verdict.
func (o *Outcome) Summary() string {
	verdict := "ok"
	if !o.Report.OK {
		var failed []string
		for _, res := range o.Report.Results {
			if !res.OK {
				failed = append(failed, fmt.Sprintf("%s: %s", res.Name, strings.Join(res.Violations, "; ")))
			}
		}
		verdict = "FAIL " + strings.Join(failed, " | ")
	}
	return fmt.Sprintf("seed %d faults [%s]: %s", o.Report.Seed, strings.Join(o.Faults, ", "), verdict)
}
