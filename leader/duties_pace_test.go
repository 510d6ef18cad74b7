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

// turnCountingStore counts a duty's loop turns: each turn takes the watch
// channel once, before its pass.
type turnCountingStore struct {
	Store
	turns atomic.Int64
}

func (c *turnCountingStore) WatchCh() <-chan struct{} {
	c.turns.Add(1)
	return c.Store.WatchCh()
}

// TestBackgroundDutiesSpacePasses: creates commit back to back, each
// closing the watch channel. A background duty must not pass once per
// commit (each pass reads the state on the leader while the commit's answer
// and the next entry want the cores, issue 19), but at most once per
// dutyGap.
func TestBackgroundDutiesSpacePasses(t *testing.T) {
	duties := []struct {
		name string
		duty func(*Leader) Duty
	}{
		{"deletion", func(l *Leader) Duty { return &deleter{l: l} }},
		{"failover", func(l *Leader) Duty { return &failover{l: l} }},
		{"drain", func(l *Leader) Duty { return &drainer{l: l} }},
		{"node-services", func(l *Leader) Duty { return &services{l: l} }},
		{"rollouts", func(l *Leader) Duty { return &rollouts{l: l} }},
		{"reconcile", func(l *Leader) Duty { return &reconciler{l: l} }},
	}
	for _, d := range duties {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t)
			e.store.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "empty"}})
			cs := &turnCountingStore{Store: e.l.store}
			e.l.store = cs
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			wg.Add(1)
			start := time.Now()
			go func() {
				defer wg.Done()
				d.duty(e.l).Run(ctx)
			}()
			const wantTurns, maxCreates = 6, 200_000
			creates := 0
			for ; cs.turns.Load() < wantTurns; creates++ {
				if creates == maxCreates {
					t.Fatalf("%d creates and %d turns: the duty does not run", creates, cs.turns.Load())
				}
				e.bundle(fmt.Sprintf("b%06d", creates), "empty", "", 100)
			}
			cancel()
			wg.Wait()
			elapsed := time.Since(start)
			// The first turn runs at once, each later one at least dutyGap
			// after the one before, and the last may be the one cancel ended.
			turns := int(cs.turns.Load())
			if limit := int(elapsed/dutyGap) + 2; turns > limit {
				t.Fatalf("%d turns over %d creates in %v: want at most %d", turns, creates, elapsed, limit)
			}
			t.Logf("%d turns over %d creates in %v", turns, creates, elapsed)
		})
	}
}
