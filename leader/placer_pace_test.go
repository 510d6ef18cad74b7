package leader

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
)

// countingStore counts the placer's reads of the state: a pass reads it
// once to build its queue, and once more after a plan commits.
type countingStore struct {
	Store
	reads atomic.Int64
}

func (c *countingStore) State() *fsm.State {
	c.reads.Add(1)
	return c.Store.State()
}

// streamCreates runs duty and creates bundles into a pool without nodes,
// back to back, until done holds, then stops it. It returns how many it
// created and how long the duty ran.
func streamCreates(t *testing.T, e *env, duty Duty, done func() bool) (int, time.Duration) {
	t.Helper()
	e.store.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "empty"}})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		duty.Run(ctx)
	}()
	const maxCreates = 200_000
	creates := 0
	for ; !done(); creates++ {
		if creates == maxCreates {
			cancel()
			wg.Wait()
			t.Fatalf("%s: %d creates and it has not got as far as asked: it does not run", duty.Name(), creates)
		}
		e.bundle(fmt.Sprintf("b%06d", creates), "empty", "", 100)
	}
	cancel()
	wg.Wait()
	return creates, time.Since(start)
}

// TestPlacerSpacesPassesThatCommitNothing: creates into a pool without
// nodes commit back to back, each waking the placer. Its failure records
// are held (recordCoalesce), so most passes commit nothing; those must
// come at most one per passSpacing, not one per commit, since each reads
// and sorts every pending bundle (issue 19).
func TestPlacerSpacesPassesThatCommitNothing(t *testing.T) {
	e := newEnv(t)
	cs := &countingStore{Store: e.l.store}
	e.l.store = cs
	// Many commits per passSpacing, each a wake-up the placer would
	// otherwise take at once.
	const wantPasses = 40
	creates, elapsed := streamCreates(t, e, &placer{l: e.l}, func() bool { return cs.reads.Load() >= wantPasses })
	plans := 0
	for _, p := range e.store.take() {
		if p.typ == fsm.ApplyPlanType {
			plans++
		}
	}
	passes := int(cs.reads.Load()) - plans // a committing pass reads twice
	// Every pass that commits nothing starts at least passSpacing before
	// the next; the ones that commit, and the last, are the rest.
	limit := int(elapsed/passSpacing) + plans + 2
	if passes > limit {
		t.Fatalf("%d passes over %d creates in %v (%d plans): want at most %d", passes, creates, elapsed, plans, limit)
	}
	t.Logf("%d passes, %d plans, %v", passes, plans, elapsed)
	if plans == 0 {
		t.Fatal("no plan committed the failure records: the placer did not run")
	}
}

// TestPlacerCommitsAFullPlanOfRecords: records held within recordCoalesce
// commit at once when they fill a plan, so a burst of creates into a full
// pool leaves at most about a plan's worth pending for the passes to read.
func TestPlacerCommitsAFullPlanOfRecords(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 4, fsm.NodeReady)
	p := &placer{l: e.l}
	e.bundle("first", "p", "", 2000)
	if p.pass(e.ctx); e.get("first").State != fsm.StateUnplaceable {
		t.Fatalf("first record: %s, want unplaceable", e.get("first").State)
	}
	e.store.take()
	for i := range maxBundlesPerPlan - 1 {
		e.bundle(fmt.Sprintf("b%04d", i), "p", "", 2000)
	}
	if p.pass(e.ctx); len(e.store.take()) != 0 {
		t.Fatal("records short of a plan committed within recordCoalesce")
	}
	e.bundle("last", "p", "", 2000) // the held ones and this one fill a plan
	p.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 1 || ps[0].typ != fsm.ApplyPlanType {
		t.Fatalf("a full plan of records proposed %v, want one plan", typesOf(ps))
	}
	for _, id := range []string{"b0000", fmt.Sprintf("b%04d", maxBundlesPerPlan-2), "last"} {
		if st := e.get(id).State; st != fsm.StateUnplaceable {
			t.Fatalf("%s %s, want its record committed", id, st)
		}
	}
}
