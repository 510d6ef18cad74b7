package leader

import (
	"archive/tar"
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
)

// TestTimers: startAt makes a scheduled bundle pending and stopAt starts
// its deletion, each when the leader's clock reaches it and not before; a
// bundle already deleting is not named again.
func TestTimers(t *testing.T) {
	tests := []struct {
		name          string
		start, stop   time.Duration // from now; 0 = unset
		early, due    time.Duration // when to pass: before, then at the time
		before, after string        // bundle state at those passes
		wantStart     bool          // the due Timer names the bundle to start
		// inJob sets the times as the job's template launch times instead
		// of the bundle's startAt and stopAt.
		inJob bool
	}{
		{"startAt", time.Minute, 0, 59 * time.Second, time.Minute, fsm.StateScheduled, fsm.StatePending, true, false},
		{"stopAt", 0, 2 * time.Minute, time.Minute, 2 * time.Minute, fsm.StatePending, fsm.StateDeleting, false, false},
		{"both, start first", time.Minute, 2 * time.Minute, time.Minute, 2 * time.Minute, fsm.StatePending, fsm.StateDeleting, false, false},
		{"job startDateTime", time.Minute, 0, 59 * time.Second, time.Minute, fsm.StateScheduled, fsm.StatePending, true, true},
		{"job stopDateTime", 0, 2 * time.Minute, time.Minute, 2 * time.Minute, fsm.StatePending, fsm.StateDeleting, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 100, 1, fsm.NodeUnknown) // the pool; nothing is placed
			e.create(timedSpec(t, e, tc.start, tc.stop, tc.inJob))
			tm := &timers{l: e.l}
			e.clock.Advance(tc.early)
			tm.pass(e.ctx)
			if got := e.get("b").State; got != tc.before {
				t.Fatalf("at +%s the bundle is %s, want %s", tc.early, got, tc.before)
			}
			e.store.take()
			e.clock.Advance(tc.due - tc.early)
			tm.pass(e.ctx)
			if got := e.get("b").State; got != tc.after {
				t.Fatalf("at +%s the bundle is %s, want %s", tc.due, got, tc.after)
			}
			ps := e.store.take()
			if len(ps) != 1 || ps[0].typ != fsm.TimerType {
				t.Fatalf("proposed %v, want one Timer", typesOf(ps))
			}
			req := ps[0].body.(*fsm.TimerRequest)
			if req.Now != e.now() || tc.wantStart != slices.Equal(req.Start, []string{"b"}) ||
				(tc.stop != 0) != slices.Equal(req.Stop, []string{"b"}) {
				t.Fatalf("timer %+v at %d", req, e.now())
			}
			tm.pass(e.ctx)
			if ps := e.store.take(); len(ps) != 0 {
				t.Fatalf("a later pass proposed %v again", typesOf(ps))
			}
		})
	}
}

// timedSpec is a one-job bundle starting and stopping at the given offsets
// from the env's clock (0: unset), as startAt and stopAt or, with inJob, as
// its template launch's times.
func timedSpec(t *testing.T, e *env, start, stop time.Duration, inJob bool) fsm.BundleSpec {
	s := spec("b", "p", "", 100)
	now := e.clock.Now()
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }
	switch {
	case inJob:
		e.store.pushTemplate(t, "web")
		l := &s.Jobs[0].Launch
		*l = fsm.Launch{Kind: fsm.LaunchProductTemplate, Ref: "web"}
		if start != 0 {
			l.StartDateTime = at(start)
		}
		if stop != 0 {
			l.StopDateTime = at(stop)
		}
	default:
		if start != 0 {
			s.StartAt = now.Add(start).UnixNano()
		}
		if stop != 0 {
			s.StopAt = now.Add(stop).UnixNano()
		}
	}
	return s
}

// pushTemplate stores a one-file compose template under name.
func (r *fsmRig) pushTemplate(t *testing.T, name string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := "services:\n  app:\n    image: x\n"
	if err := tw.WriteHeader(&tar.Header{Name: "compose.yaml", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	info, err := artifact.Inspect(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	r.ok(fsm.PutTemplateType, &fsm.PutTemplateRequest{Name: name, Digest: info.Digest, Runtime: info.Runtime,
		Files: info.Files, Archive: buf.Bytes()})
}

// TestTimersSkip: a pass skips reading the bundles only while nothing can
// have come due: a bundle created since the last pass is read even though
// no startAt was ahead then, and a startAt that was ahead fires once the
// clock reaches it though nothing changed.
func TestTimersSkip(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 100, 1, fsm.NodeUnknown)
	tm := &timers{l: e.l}
	tm.pass(e.ctx)
	if tm.next != math.MaxInt64 {
		t.Fatalf("no bundles: next %d", tm.next)
	}
	e.create(timedSpec(t, e, time.Minute, 0, false))
	e.store.take()
	e.clock.Advance(2 * time.Minute) // due, and the table changed since the pass
	tm.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 1 || ps[0].typ != fsm.TimerType {
		t.Fatalf("a bundle created after a pass: proposed %v, want one Timer", typesOf(ps))
	}
	e.create(timedSpec2(t, e, "c", time.Minute))
	e.store.take()
	tm.pass(e.ctx)
	if want := e.clock.Now().Add(time.Minute).UnixNano(); tm.next != want {
		t.Fatalf("next %d, want c's startAt %d", tm.next, want)
	}
	tm.pass(e.ctx) // nothing changed, nothing due
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("proposed %v before anything was due", typesOf(ps))
	}
	e.clock.Advance(time.Minute)
	tm.pass(e.ctx)
	if ps := e.store.take(); len(ps) != 1 || ps[0].typ != fsm.TimerType {
		t.Fatalf("c's startAt reached: proposed %v, want one Timer", typesOf(ps))
	}
}

// timedSpec2 is timedSpec's startAt bundle under another id.
func timedSpec2(t *testing.T, e *env, id string, start time.Duration) fsm.BundleSpec {
	s := timedSpec(t, e, start, 0, false)
	s.ID = id
	return s
}

// TestNextWait: the timers duty wakes at the earliest timer ahead, never
// later than a scan interval, and never spins on one already due.
func TestNextWait(t *testing.T) {
	const now = int64(1_000_000_000_000)
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name string
		next int64
		want time.Duration
	}{
		{"a timer 250 ms ahead", now + 250*ms, 250 * time.Millisecond},
		{"a timer 1 ns ahead", now + 1, time.Nanosecond},
		{"a timer beyond the scan interval", now + 5000*ms, timerScanInterval},
		{"no timer ahead", math.MaxInt64, timerScanInterval},
		{"a timer just due", now, timerScanInterval},
		{"a timer overdue", now - 10*ms, timerScanInterval},
	} {
		if got := nextWait(now, tc.next); got != tc.want {
			t.Errorf("%s: nextWait = %v, want %v", tc.name, got, tc.want)
		}
	}
}
