package leader

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
)

func (e *env) drain(node string) {
	e.t.Helper()
	e.store.ok(fsm.NodeDrainType, &fsm.NodeFlagRequest{NodeID: node, On: true, Now: e.now()})
}

// TestDrainerMovesJobs: every job leaves a draining ready node: a plain
// bundle is placed elsewhere, a resilient one has its backup promoted
// first; a suspect draining node is left alone.
func TestDrainerMovesJobs(t *testing.T) {
	tests := []struct {
		name      string
		resilient bool
		status    string
		primary   string // where the primary's job ends
	}{
		{"place then stop", false, fsm.NodeReady, "n2"},
		{"promote the backup", true, fsm.NodeReady, "n2"},
		{"suspect node", false, fsm.NodeSuspect, "n1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 4000, 4, fsm.NodeReady)
			e.node("n2", "p", 4000, 4, fsm.NodeReady)
			s := spec("b", "p", "", 1000)
			if tc.resilient {
				e.node("n3", "p", 4000, 4, fsm.NodeReady)
				s.Resilience = &fsm.Resilience{SameNode: fsm.Forbid}
			}
			e.create(s)
			e.place("b", 0, "n1")
			if tc.resilient {
				e.place("b", 1, "n2")
			}
			epoch := e.get("b").Epoch
			e.drain("n1")
			e.setStatus("n1", tc.status)
			(&drainer{l: e.l}).pass(e.ctx)
			if got := e.nodesOf("b", 0)["a"]; got != tc.primary {
				t.Fatalf("primary on %s, want %s", got, tc.primary)
			}
			if tc.resilient && (e.get("b").Epoch != epoch+1 || e.nodesOf("b", 1)["a"] != "n3") {
				t.Fatalf("epoch %d (was %d), backup %v: want the backup promoted and a new one on n3",
					e.get("b").Epoch, epoch, e.nodesOf("b", 1))
			}
			for _, r := range planResults(t, e.store.take()) {
				if len(r.Rejected) != 0 {
					t.Fatalf("rejected parts: %+v", r.Rejected)
				}
			}
		})
	}
}

// TestDrainerNowhereToGo: a bundle that fits nowhere else stays where it
// is, and the pass proposes nothing the FSM would reject. The wait is
// logged and written as a drainWaits event with its reason, once, not on
// every pass: otherwise a node reads draining forever with nothing saying
// why (and before the event, only the leader's log said it).
func TestDrainerNowhereToGo(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 4000, 4, fsm.NodeReady)
	e.node("n2", "p", 1000, 4, fsm.NodeReady)
	e.bundle("b", "p", "", 3000)
	e.place("b", 0, "n1")
	e.drain("n1")
	d := &drainer{l: e.l}
	d.pass(e.ctx)
	if got := e.nodesOf("b", 0)["a"]; got != "n1" {
		t.Fatalf("job on %s, want it left on n1", got)
	}
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
	d.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("a second pass with the same wait proposed %v", typesOf(ps))
	}
	var waits []fsm.Event
	for _, ev := range e.store.State().Events(0, 0) {
		if ev.Type == "drainWaits" {
			waits = append(waits, ev)
		}
	}
	if len(waits) != 1 || waits[0].NodeID != "n1" || waits[0].BundleID != "b" || !strings.Contains(waits[0].Message, "nearest: n2") {
		t.Fatalf("drainWaits events %+v, want one for b on n1 with why", waits)
	}
	warned := e.logs.At(slog.LevelWarn)
	if len(warned) != 1 || !strings.Contains(warned[0], "drain waits") || !strings.Contains(warned[0], "bundle=b") ||
		!strings.Contains(warned[0], "nearest: n2") {
		t.Fatalf("warnings %q, want one saying the drain waits for b and why", warned)
	}
	e.node("n3", "p", 4000, 4, fsm.NodeReady)
	d.pass(e.ctx)
	if got := e.nodesOf("b", 0)["a"]; got != "n3" {
		t.Fatalf("once a node joined the job is on %s, want n3", got)
	}
}

// TestDrainerTwoDrainingNodes: a bundle with jobs on two draining nodes is
// moved from stale state at most once per batch: its jobs must stay apart.
func TestDrainerTwoDrainingNodes(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 1, fsm.NodeReady)
	e.node("n2", "p", 1000, 1, fsm.NodeReady)
	s := spec("b", "p", "", 1000, 1000)
	s.Jobs[0].SeparateFrom = []string{"b"}
	e.create(s)
	(&placer{l: e.l}).pass(e.ctx)
	e.node("n3", "p", 4000, 4, fsm.NodeReady)
	e.node("n4", "p", 4000, 4, fsm.NodeReady)
	e.drain("n1")
	e.drain("n2")
	d := &drainer{l: e.l}
	for range 2 {
		d.pass(e.ctx)
	}
	for _, r := range planResults(t, e.store.take()) {
		if len(r.Rejected) != 0 {
			t.Fatalf("rejected parts: %+v", r.Rejected)
		}
	}
	got := e.nodesOf("b", 0)
	if got["a"] == got["b"] || (got["a"] != "n3" && got["a"] != "n4") || (got["b"] != "n3" && got["b"] != "n4") {
		t.Fatalf("jobs on %v, want them apart on n3 and n4", got)
	}
}

// TestDrainerWaitsUnannouncedBelowTheLevel: while a server of the Raft
// configuration does not apply Plan.DrainWaits (an older binary, which
// would not write the event and leave the replicas' event logs apart), the
// wait is logged only and no plan carries it.
func TestDrainerWaitsUnannouncedBelowTheLevel(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ServersApply = func(level int) bool { return level < fsm.LevelRolloutSettle } })
	e.node("n1", "p", 4000, 4, fsm.NodeReady)
	e.node("n2", "p", 1000, 4, fsm.NodeReady)
	e.bundle("b", "p", "", 3000)
	e.place("b", 0, "n1")
	e.drain("n1")
	e.store.take()
	(&drainer{l: e.l}).pass(e.ctx)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("below the level a stuck drain proposed %v", typesOf(ps))
	}
	if warned := e.logs.At(slog.LevelWarn); len(warned) != 1 || !strings.Contains(warned[0], "drain waits") {
		t.Fatalf("warnings %q, want the wait logged", warned)
	}
}
