//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/check"
	"github.com/amserver/amserver/e2e/workload"
)

// Checker budgets.
const (
	// linearizableTimeout bounds porcupine; a timeout counts as a failure.
	linearizableTimeout = 30 * time.Second
	// convergeWithin (check.ConvergeWithin): a restarted worker need not
	// be back for that: the leader promotes backups and re-places on the
	// others.
	convergeWithin = check.ConvergeWithin
	// healthyWithin bounds the wait for a fully healthy cluster after a
	// run, before the next run may use it.
	healthyWithin = 2 * time.Minute
	// setupWithin bounds workload.Setup, which retries through elections.
	setupWithin = time.Minute
)

// runSpec is one run of one nemesis on a cluster.
type runSpec struct {
	name     string // report name: the nemesis, plus the run number in full mode
	nemesis  nemesisSpec
	seed     int64
	duration time.Duration
	outDir   string
	// shared marks a cluster that other runs use before and after this one.
	shared bool
}

// workloadConfig is the workload of one run: all servers, so minority-side
// servers get requests too; created bundles ask for a backup on another
// node so that worker crashes exercise failover.
func workloadConfig(c *Cluster, rs runSpec) workload.Config {
	cfg := workload.Config{Servers: c.HTTPAddrs(), Pool: "default", Seed: rs.seed, Backup: true,
		ClientOptions: c.ClientOptions()}
	if rs.shared {
		// Bundles of earlier runs stay placed on a shared cluster: small
		// ones keep a whole smoke (9 runs × 100 creates × 2 replicas) far
		// from the six workers' capacity, even with one worker down.
		cfg.CreateCapacity = 0.02
		// And fewer of them: every run's bundles stay, and after a worker
		// kill the leader re-places the replicas that worker held. At 100
		// creates a run the 7th run (worker-kill) met ~570 bundles, and
		// convergence after its heal took 6.5-8 s of the 10 s allowed.
		cfg.MaxCreates = 40
	}
	return cfg
}

// e2eMinimums is what every run must get done for its verdicts to count: a
// run of 20 s or more does hundreds of each, faults and all.
var e2eMinimums = check.Minimums{Reads: 20, Writes: 10, Creates: 5, Samples: 10}

// runOne runs the workload against c while the nemesis cycles, heals,
// checks the history and writes everything under rs.outDir/<name>/.
func runOne(ctx context.Context, c *Cluster, rs runSpec) check.Report {
	cfg := workloadConfig(c, rs)
	rng := rand.New(rand.NewPCG(uint64(rs.seed), 0x6e656d65))
	nem := rs.nemesis.build(rs.nemesis.name, c, rng)
	started := time.Now()
	setupCtx, cancel := context.WithTimeout(ctx, setupWithin)
	err := workload.Setup(setupCtx, cfg)
	cancel()
	if err != nil {
		rep := check.NewReport(rs.name, rs.seed, nil, time.Since(started))
		rep.Nemesis = rs.nemesis.name
		rep.Add(failed("setup", err.Error()))
		return rep
	}
	h := workload.NewHistory()
	tl := &timeline{h: h}
	runCtx, cancel := context.WithTimeout(ctx, rs.duration)
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = workload.Run(runCtx, cfg, h) })
	wg.Go(func() { workload.RunSampler(runCtx, cfg, h) })
	cycle(runCtx, nem, rs.duration, rng, tl)
	wg.Wait()
	cancel()
	// Heal once more: idempotent, and certain to run even if a start
	// failed half-way through the last cycle.
	_ = tl.do(ctx, "heal", nem.Heal)
	rep, viz := judge(ctx, c, rs, h, tl, runErr)
	rep.Duration = time.Since(started).Round(time.Millisecond).String()
	record(ctx, c, rs, rep, h, viz, tl, started)
	return rep
}

// judge runs every checker, plus the harness's own findings: nemesis
// actions that failed, and a cluster that did not return to health.
func judge(ctx context.Context, c *Cluster, rs runSpec, h *workload.History, tl *timeline, runErr error) (check.Report, []byte) {
	rep := check.NewReport(rs.name, rs.seed, h, 0)
	rep.Nemesis = rs.nemesis.name
	ops := h.Ops()
	// Convergence first: its budget starts at the heal.
	conv := check.Converge(ctx, c.HTTPAddrs(), convergeWithin, c.ClientOptions()...)
	lin, viz := check.Linearizable(ops, linearizableTimeout)
	rep.Add(lin)
	final, err := finalBundles(ctx, c, rs.seed)
	if err != nil {
		rep.Add(failed("unique-creates", "final bundle list unreadable: "+err.Error()))
	} else {
		rep.Add(check.UniqueCreates(ops, final))
		rep.Add(check.FinalRegisters(ops, final))
	}
	rep.Add(check.Placement(h.Samples()))
	rep.Add(check.MonotonicIndex(ops))
	rep.Add(check.Evidence(ops, h.Samples(), e2eMinimums))
	rep.Add(conv)
	var harness []string
	if runErr != nil {
		harness = append(harness, "workload: "+runErr.Error())
	}
	harness = append(harness, tl.errors()...)
	if err := c.WaitHealthy(ctx, healthyWithin); err != nil {
		harness = append(harness, "cluster not healthy after the run: "+err.Error())
	}
	rep.Add(check.Result{Name: "nemesis", OK: len(harness) == 0, Checked: len(tl.events), Violations: harness, Count: len(harness)})
	return rep, viz
}

// record writes the report, history, porcupine's visualization (failed
// runs), the nemesis timeline and the containers' logs.
func record(ctx context.Context, c *Cluster, rs runSpec, rep check.Report, h *workload.History, viz []byte, tl *timeline, since time.Time) {
	if err := check.WriteRun(rs.outDir, rep, h, viz); err != nil {
		c.logf("writing run: %v", err)
	}
	dir := filepath.Join(rs.outDir, rs.name)
	if err := tl.write(filepath.Join(dir, "nemesis.json")); err != nil {
		c.logf("%v", err)
	}
	if err := c.SaveLogs(ctx, dir, since); err != nil {
		c.logf("saving logs: %v", err)
	}
}

func failed(name, why string) check.Result {
	return check.Result{Name: name, OK: false, Violations: []string{why}, Count: 1}
}

// finalBundles reads the bundle list linearizably (default read) from the
// first server that answers. On a shared cluster it keeps only this run's
// creates (ids c-<seed>-...) and the registers: earlier runs' creates were
// judged by their own runs and would otherwise look like phantoms here.
func finalBundles(ctx context.Context, c *Cluster, seed int64) ([]api.Bundle, error) {
	var all []api.Bundle
	err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		var errs []string
		for _, s := range c.Servers {
			bs, _, err := c.Client(s.ID).Bundles(ctx, api.BundleFilter{}, nil)
			if err == nil {
				all = bs
				return nil
			}
			errs = append(errs, err.Error())
		}
		return notYet("%s", strings.Join(errs, "; "))
	})
	if err != nil {
		return nil, err
	}
	mine := fmt.Sprintf("%s%d-", check.CreatePrefix, seed)
	var out []api.Bundle
	for _, b := range all {
		if !strings.HasPrefix(b.ID, check.CreatePrefix) || strings.HasPrefix(b.ID, mine) {
			out = append(out, b)
		}
	}
	return out, nil
}
