package leader

import (
	"errors"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// TestPoolHugeWarmRefused: a warm pool of 10^9 nodes is refused with a
// code before the planner ever sees it (it used to loop in fillWarm until
// memory ran out).
func TestPoolHugeWarmRefused(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 1_000_000_000)
	res, err := r.Apply(t.Context(), fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	var fe *fsm.FindingError
	if err != nil || !errors.As(res.Err, &fe) || fe.Finding.Code != fsm.CodeLimitExceeded {
		t.Fatalf("warm 10^9: err %v, result %v; want a limitExceeded finding", err, res.Err)
	}
	if r.State().Pool("e") != nil {
		t.Fatal("the pool was stored")
	}
}

// TestPlannerSpawnBudget: one pass creates at most maxSpawnsPerPass spawns
// however much a pool's warm pool, floor or demand asks for, and runs at
// most maxSimulationsPerPass placements; the next pass goes on from there.
func TestPlannerSpawnBudget(t *testing.T) {
	r := newFSMRig(t)
	p := planPool("e", 0, 10_000)
	p.MinNodes = 10_000
	r.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
	for i := range 2 * maxDemandPerPass {
		r.unplaceable(string(rune('a'+i%26))+string(rune('a'+i/26)), "e", 7000, 2)
	}
	st := r.f.State()
	pl := newPlanner(st, scheduler.NewEngine(scheduler.Options{}), elasticPools(st), 0, func(p *fsm.Pool) string { return allowAll(p.Provisioner) })
	plan := pl.run()
	if n := len(plan.spawns); n == 0 || n > maxSpawnsPerPass {
		t.Fatalf("one pass planned %d spawns, want 1..%d", n, maxSpawnsPerPass)
	}
	if pl.sims > maxSimulationsPerPass {
		t.Fatalf("one pass ran %d simulations, budget %d", pl.sims, maxSimulationsPerPass)
	}
}

// TestElasticPassesFillWarmWithinBudget: passes of the duty write at most
// maxSpawnsPerPass spawns each, and successive passes make progress.
func TestElasticPassesFillWarmWithinBudget(t *testing.T) {
	e := newEnv(t)
	e.pool(planPool("e", 0, 10_000))
	d := e.elastic()
	for pass := 1; pass <= 3; pass++ {
		d.pass(e.ctx)
		spawns := 0
		for _, p := range e.store.take() {
			if p.typ == fsm.UpsertSpawnType {
				spawns++
			}
		}
		if spawns != maxSpawnsPerPass {
			t.Fatalf("pass %d wrote %d spawns, want the budget of %d", pass, spawns, maxSpawnsPerPass)
		}
		if got := len(e.spawns()); got != pass*maxSpawnsPerPass {
			t.Fatalf("after pass %d: %d spawns", pass, got)
		}
	}
	// The operator takes the warm pool back: the next pass asks for nothing.
	e.pool(planPool("e", 0, 0))
	d.pass(e.ctx)
	for _, p := range e.store.take() {
		if p.typ == fsm.UpsertSpawnType && p.body.(*fsm.UpsertSpawnRequest).Spawn.State == "" {
			t.Fatal("a pass after warm went to 0 still created a spawn")
		}
	}
}
