package leader

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// simTick is how often the simulated worker looks at its assignments and
// the rollouts duty runs a pass, on the fake clock.
const simTick = 100 * time.Millisecond

// script is what a version's job reads from the start of a run of its
// generation: status from each offset on. The exec driver reports a first
// start running at once and failed from a crash; a restart reads failed
// until a run has stayed up 5 s (worker/exec_task.go).
type script []struct {
	at     time.Duration
	status string
}

var (
	healthy = script{{0, fsm.JobRunning}}
	// crashes at once, and its restarts never stay up 5 s.
	crashes = script{{0, fsm.JobRunning}, {simTick, fsm.JobFailed}}
	// flaps runs 2 s, crashes, and reads running again once a restart
	// stayed up 5 s, for 2 s: never the window's 5 s in one run.
	flaps = script{{0, fsm.JobRunning}, {2 * time.Second, fsm.JobFailed}, {8 * time.Second, fsm.JobRunning},
		{10 * time.Second, fsm.JobFailed}, {16 * time.Second, fsm.JobRunning}, {18 * time.Second, fsm.JobFailed}}
	// recovers crashes after 2 s once, then runs.
	recovers = script{{0, fsm.JobRunning}, {2 * time.Second, fsm.JobFailed}, {3 * time.Second, fsm.JobRunning}}
)

func (s script) at(d time.Duration) string {
	out := ""
	for _, st := range s {
		if st.at <= d {
			out = st.status
		}
	}
	return out
}

// rolloutSim is a service "s" of count replicas on n1, each one job, whose
// worker the test plays: every tick it starts the runs of assignments whose
// generation moved and reports what their version's script says; then the
// rollouts duty runs a pass. It records when each replica's new run
// started and the most replicas ever not running at once.
type rolloutSim struct {
	t       *testing.T
	e       *env
	d       *rollouts
	old     bool // report and replace as an older leader did (no SettleRollout)
	scripts map[string]script
	started map[string]time.Time // assignment id → start of its generation's run
	gen     map[string]uint64
	t0      time.Time
	worst   int
}

func newRolloutSim(t *testing.T, count, maxUnavailable int, window time.Duration, next script) *rolloutSim {
	e := newEnv(t, func(c *Config) { c.RolloutSettle = window })
	e.node("n1", "p", 10_000, 0, fsm.NodeReady)
	spec := fsm.BundleSpec{ID: "s", Pool: "p", Kind: fsm.KindService, Count: count, MaxUnavailable: maxUnavailable,
		Jobs: []fsm.Job{{Name: "web", Requirements: ledger.Request{Capacity: 100}, Launch: versionLaunch("1")}}}
	e.create(spec)
	for slot := range count {
		e.place("s", slot, "n1")
	}
	s := &rolloutSim{t: t, e: e, d: &rollouts{l: e.l}, scripts: map[string]script{"1": healthy, "2": next},
		started: map[string]time.Time{}, gen: map[string]uint64{}}
	s.tick(0)
	if n := s.unavailable(); n != 0 {
		t.Fatalf("%d replicas not running before the rollout", n)
	}
	return s
}

func versionLaunch(v string) fsm.Launch {
	return fsm.Launch{Kind: "legacy", Job: &fsm.LegacyJob{Driver: "none", Env: map[string]string{"V": v}}}
}

// rollout replaces the launch with version 2, as the API does.
func (s *rolloutSim) rollout() {
	next := s.e.get("s").Spec
	next.Jobs = slices.Clone(next.Jobs)
	next.Jobs[0].Launch = versionLaunch("2")
	s.e.store.ok(fsm.ReplaceBundleType, &fsm.ReplaceBundleRequest{Spec: next, Rollout: true, RelaunchUnavailable: true,
		SettleRollout: !s.old, Now: s.e.now()})
	s.t0, s.worst = s.e.clock.Now(), 0
	s.note()
}

// tick advances the clock by d, plays the worker and runs a pass.
func (s *rolloutSim) tick(d time.Duration) {
	s.e.clock.Advance(d)
	now := s.e.clock.Now()
	for _, listed := range s.e.store.State().BundleAssignments("s") {
		a := s.e.store.State().Assignment(listed.ID) // a report before may have relaunched it
		if a == nil || a.Desired != fsm.DesiredRun {
			continue
		}
		if g, ok := s.gen[a.ID]; !ok || g != a.Generation {
			s.gen[a.ID], s.started[a.ID] = a.Generation, now
		}
		want := s.scripts[a.Launch.Job.Env["V"]].at(now.Sub(s.started[a.ID]))
		if want != a.Status {
			s.e.store.ok(fsm.AssignmentStatusType, &fsm.AssignmentStatusRequest{NodeID: a.NodeID, AssignmentID: a.ID,
				Status: want, Now: s.e.now(), Generation: a.Generation, RelaunchUnavailable: true, SettleRollout: !s.old})
			s.note()
		}
	}
	s.d.pass(s.e.ctx)
	s.note()
}

// note records how many replicas are not running now.
func (s *rolloutSim) note() { s.worst = max(s.worst, s.unavailable()) }

func (s *rolloutSim) unavailable() int {
	n := 0
	for _, r := range s.e.get("s").Replicas {
		for _, j := range r.Jobs {
			if j.Status != fsm.JobRunning {
				n++
				break
			}
		}
	}
	return n
}

// runFor ticks for d of the fake clock, or until done says so; it returns
// how long after the rollout started it stopped.
func (s *rolloutSim) runFor(d time.Duration, done func() bool) time.Duration {
	for s.e.clock.Now().Sub(s.t0) < d && (done == nil || !done()) {
		s.tick(simTick)
	}
	return s.e.clock.Now().Sub(s.t0)
}

// starts are when the replicas' runs of the bundle's generation started,
// after the rollout, by slot; -1 for a replica not relaunched.
func (s *rolloutSim) starts() []time.Duration {
	b := s.e.get("s")
	out := make([]time.Duration, len(b.Replicas))
	for i := range out {
		out[i] = -1
	}
	for _, a := range s.e.store.State().BundleAssignments("s") {
		if a.Desired == fsm.DesiredRun && a.Generation == b.Generation && s.gen[a.ID] == a.Generation {
			out[a.Replica] = s.started[a.ID].Sub(s.t0)
		}
	}
	return out
}

func (s *rolloutSim) finished() bool {
	b := s.e.get("s")
	return !b.Rolling && len(b.Settling) == 0 && !slices.Contains(s.starts(), -1)
}

// TestRolloutOfACrashingVersion: a version that crashes right after it
// starts reads running first. The rollout relaunched the next replica on
// that report, and then both were down with maxUnavailable 1; now a
// relaunched replica counts only once it has run for the settle window,
// so no more than maxUnavailable replicas are ever down, and the rollout
// waits on the replicas it took down (for a fix, which reaches them first).
// A version that flaps between running and failed never runs the window
// through. An older leader's commands roll out as they did: the bug.
func TestRolloutOfACrashingVersion(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		count, maxUnavailable int
		next                  script
		old                   bool
		worst, relaunched     int
	}{
		{"crashes at once", 3, 1, crashes, false, 1, 1},
		{"crashes at once, maxUnavailable 2", 5, 2, crashes, false, 2, 2},
		{"flaps inside the window", 3, 1, flaps, false, 1, 1},
		{"an older leader's commands", 3, 1, crashes, true, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRolloutSim(t, tc.count, tc.maxUnavailable, 0, tc.next)
			s.old = tc.old
			s.rollout()
			s.runFor(time.Minute, nil)
			relaunched := 0
			for _, at := range s.starts() {
				if at >= 0 {
					relaunched++
				}
			}
			if s.worst != tc.worst || relaunched != tc.relaunched {
				t.Fatalf("%d replicas down at worst, %d relaunched (at %v); want %d and %d",
					s.worst, relaunched, s.starts(), tc.worst, tc.relaunched)
			}
		})
	}
}

// TestRolloutSettleTiming: a rollout of a version that runs relaunches
// the next replica once the last one has run for the window, on the
// leader's clock, so it takes count × (window + a tick) with one replica
// down at a time; one whose run crashed inside the window is timed again
// from its next run. The window is the Config's (5 s when unset).
func TestRolloutSettleTiming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration // Config.RolloutSettle
		next   script
		step   time.Duration // between a replica's start and the next one's
	}{
		{"default window", 0, healthy, 5*time.Second + simTick},
		{"2 s window", 2 * time.Second, healthy, 2*time.Second + simTick},
		{"a crash inside the window times the run again", 0, recovers, 3*time.Second + 5*time.Second + simTick},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const count = 3
			s := newRolloutSim(t, count, 1, tc.window, tc.next)
			s.rollout()
			took := s.runFor(time.Minute, s.finished)
			want := make([]time.Duration, count)
			for i := range want {
				want[i] = simTick + time.Duration(i)*tc.step
			}
			if got := s.starts(); !slices.Equal(got, want) || took != count*tc.step || s.worst != 1 {
				t.Fatalf("replicas started at %v, finished at %v, %d down at worst; want %v, %v, 1",
					got, took, s.worst, want, count*tc.step)
			}
		})
	}
}

// TestRolloutSettleAcrossLeaderChange: a new leader knows nothing of the
// windows its predecessor was timing and times them again from when it
// first sees the runs: a rollout is delayed by a leader change, never let
// ahead.
func TestRolloutSettleAcrossLeaderChange(t *testing.T) {
	s := newRolloutSim(t, 3, 1, 0, healthy)
	s.rollout()
	s.runFor(3*time.Second, nil)
	s.d = &rollouts{l: New(s.e.l.cfg)} // the next term's duty, on the same state
	s.runFor(time.Minute, s.finished)
	step := 5*time.Second + simTick
	// The new leader first sees replica 0 run a tick after it took over.
	want := []time.Duration{simTick, 3*time.Second + simTick + step, 3*time.Second + simTick + 2*step}
	if got := s.starts(); !slices.Equal(got, want) || s.worst != 1 {
		t.Fatalf("replicas started at %v, %d down at worst; want %v, 1", got, s.worst, want)
	}
}

// TestRolloutSettleProposals: a pass proposes a run once it is due, names
// the run it timed, and does not propose it again while the command is in
// flight or every pass after a failure: a second later, if still due.
func TestRolloutSettleProposals(t *testing.T) {
	s := newRolloutSim(t, 2, 1, 0, healthy)
	s.rollout()
	s.runFor(5*time.Second, nil)
	s.e.store.take()
	s.e.store.failNext(fmt.Errorf("lost the leadership"))
	s.tick(simTick) // due: proposed, and failed
	ps := s.e.store.take()
	if len(ps) != 1 || ps[0].typ != fsm.RolloutSettledType {
		t.Fatalf("proposed %v, want one RolloutSettled", typesOf(ps))
	}
	a := s.e.store.State().Assignment(fsm.AssignmentID("s", 0, "web", "n1"))
	if got := ps[0].body.(*fsm.RolloutSettledRequest).Settled; !slices.Equal(got, []fsm.SettledReplica{{BundleID: "s", Slot: 0, Index: a.ModifyIndex}}) {
		t.Fatalf("settled %+v, want slot 0 at index %d", got, a.ModifyIndex)
	}
	for range 9 {
		s.tick(simTick)
	}
	if ps := s.e.store.take(); len(ps) != 0 {
		t.Fatalf("within a second of the failure, proposed %v", typesOf(ps))
	}
	s.tick(simTick)
	if ps := s.e.store.take(); len(ps) != 1 || ps[0].res == nil || ps[0].res.Err != nil {
		t.Fatalf("a second after the failure, proposed %v", typesOf(ps))
	}
	s.tick(simTick) // the worker starts replica 1
	if st := s.starts(); st[1] < 0 {
		t.Fatalf("the settled proposal did not move the rollout on: %v", st)
	}
}

// TestRolloutSettleWaitsForServersLevel: while a server of the Raft
// configuration does not apply RolloutSettled (an older server added back
// after the rollout started), the duty proposes none, which would stop
// that server, and logs it once; once every server does, it proposes the
// runs that are due and says so.
func TestRolloutSettleWaitsForServersLevel(t *testing.T) {
	level := fsm.LevelRolloutSettle
	s := newRolloutSim(t, 2, 1, 0, healthy)
	s.e.l.cfg.ServersApply = func(n int) bool { return n <= level }
	s.rollout()
	s.runFor(4*time.Second, nil)
	s.e.store.take()
	level = fsm.LevelRolloutSettle - 1
	s.runFor(20*time.Second, nil) // replica 0 due from 5 s on
	if ps := s.e.store.take(); slices.Contains(typesOf(ps), fsm.RolloutSettledType) {
		t.Fatalf("below the level, proposed %v", typesOf(ps))
	}
	if got := s.e.logs.Count(slog.LevelWarn, msgRolloutsHeld); got != 1 {
		t.Fatalf("logged the hold %d times, want once", got)
	}
	if st := s.starts(); st[1] >= 0 {
		t.Fatalf("replica 1 relaunched below the level: %v", st)
	}
	level = fsm.LevelRolloutSettle
	s.tick(simTick)
	if ps := s.e.store.take(); !slices.Equal(typesOf(ps), []fsm.MessageType{fsm.RolloutSettledType}) {
		t.Fatalf("back at the level, proposed %v, want one RolloutSettled", typesOf(ps))
	}
	if got := s.e.logs.Count(slog.LevelInfo, msgRolloutsResumed); got != 1 {
		t.Fatalf("logged the end of the hold %d times, want once", got)
	}
	s.runFor(time.Minute, s.finished)
	if !s.finished() {
		t.Fatalf("the rollout did not finish: %+v", s.e.get("s"))
	}
}

func TestConfigRolloutSettleDefault(t *testing.T) {
	if got := New(Config{}).cfg.RolloutSettle; got != 5*time.Second {
		t.Fatalf("RolloutSettle defaults to %v, want 5s", got)
	}
}
