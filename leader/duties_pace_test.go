package leader

import (
	"sync/atomic"
	"testing"
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
			cs := &turnCountingStore{Store: e.l.store}
			e.l.store = cs
			const wantTurns = 6
			creates, elapsed := streamCreates(t, e, d.duty(e.l), func() bool { return cs.turns.Load() >= wantTurns })
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
