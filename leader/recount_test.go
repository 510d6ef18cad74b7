package leader

import (
	"testing"

	"github.com/amserver/amserver/fsm"
)

// TestPlansCarryDegradedRecountAtTheLevel: a leader's plans ask the FSM to
// write a service's degraded event again when its replica count changes
// only once every server applies the level that writes it; an older
// follower would not write the event, and the replicas' event logs would
// differ.
func TestPlansCarryDegradedRecountAtTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		below bool
	}{
		{"every server at the level", false},
		{"a server below it", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				c.ServersApply = func(level int) bool { return !tc.below || level < fsm.LevelRolloutSettle }
			})
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			e.bundle("b", "p", "", 1000)
			e.store.take()
			if got := (&placer{l: e.l}).pass(e.ctx); got != 1 {
				t.Fatalf("pass committed %d parts, want 1", got)
			}
			ps := e.store.take()
			if len(ps) != 1 || ps[0].typ != fsm.ApplyPlanType {
				t.Fatalf("proposed %v, want one plan", typesOf(ps))
			}
			if got := ps[0].body.(*fsm.Plan).DegradedRecount; got == tc.below {
				t.Fatalf("DegradedRecount %v with a server below the level %v", got, tc.below)
			}
		})
	}
}
