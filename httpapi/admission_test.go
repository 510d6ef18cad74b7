package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/fakeclock"
	"github.com/amserver/amserver/internal/poll"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// windowOf observes one window's write latencies.
func windowOf(a *admission, d ...time.Duration) {
	for _, x := range d {
		a.observe(x)
	}
}

// TestAdmissionShare: the share of slot time halves per window whose
// median write latency is past factor x the lowest recent median (never
// below the floor), grows back a step per window that is not, and a quiet
// server (no writes) returns to the whole share.
func TestAdmissionShare(t *testing.T) {
	steady := []time.Duration{ms(4), ms(5), ms(5), ms(6), ms(40)}  // median 5 ms, one slow fsync
	slow := []time.Duration{ms(9), ms(30), ms(35), ms(40), ms(50)} // median 35 ms
	type window struct {
		writes []time.Duration
		share  float64 // after the window
	}
	tests := []struct {
		name    string
		factor  float64
		windows []window
	}{
		{"steady writes keep the whole share", 2, []window{{steady, 1}, {steady, 1}, {steady, 1}}},
		{"slow writes halve it per window", 2, []window{{steady, 1}, {slow, 0.5}, {slow, 0.25}, {slow, 0.125}}},
		{"it recovers a step per window", 2, []window{
			{steady, 1}, {slow, 0.5}, {slow, 0.25}, {steady, 0.25 + defaultShareStep}, {steady, 0.25 + 2*defaultShareStep},
		}},
		{"never below the floor", 2, []window{
			{steady, 1}, {slow, 0.5}, {slow, 0.25}, {slow, 0.125}, {slow, 0.0625}, {slow, defaultMinShare}, {slow, defaultMinShare},
		}},
		{"a quiet server recovers", 2, []window{{steady, 1}, {slow, 0.5}, {nil, 0.5 + defaultShareStep}}},
		{"a larger factor tolerates more", 8, []window{{steady, 1}, {slow, 1}}},
		{"off", 0, []window{{steady, 1}, {slow, 1}, {slow, 1}}},
		{"the first window is its own floor", 2, []window{{slow, 1}, {slow, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New(time.Unix(1_700_000_000, 0))
			a := newAdmission(tc.factor, defaultAdmitWindow, clock.Now)
			for i, w := range tc.windows {
				windowOf(a, w.writes...)
				clock.Advance(defaultAdmitWindow)
				if got := a.Share(); got != w.share {
					t.Fatalf("after window %d: share %v, want %v", i, got, w.share)
				}
			}
		})
	}
}

// TestAdmissionCooldown: a slot rests busy*(1/share-1) after a use, so
// expensive work holds at most the share of its time.
func TestAdmissionCooldown(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	a := newAdmission(2, defaultAdmitWindow, clock.Now)
	if got := a.cooldown(ms(100)); got != 0 {
		t.Fatalf("whole share: rest %v, want none", got)
	}
	windowOf(a, ms(5), ms(5), ms(5))
	clock.Advance(defaultAdmitWindow)
	windowOf(a, ms(50), ms(50), ms(50))
	clock.Advance(defaultAdmitWindow)
	windowOf(a, ms(50), ms(50), ms(50))
	clock.Advance(defaultAdmitWindow) // share 1/4
	if got, want := a.cooldown(ms(100)), ms(300); got != want {
		t.Fatalf("quarter share: rest %v, want %v", got, want)
	}
	if got := a.cooldown(time.Minute); got != maxRest {
		t.Fatalf("a slot held for a minute rests %v, want the bound %v", got, maxRest)
	}
	var off *admission
	if off.cooldown(time.Second) != 0 || off.Share() != 1 {
		t.Fatal("no controller must mean no rest")
	}
}

// TestAdmissionFloorForgets: the floor is the lowest median of the last
// floorWindows windows with writes, so a lasting change of the disk moves
// it, and latencies back at the new normal no longer count as slow.
func TestAdmissionFloorForgets(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	a := newAdmission(2, defaultAdmitWindow, clock.Now)
	windowOf(a, ms(1), ms(1), ms(1))
	clock.Advance(defaultAdmitWindow)
	for range floorWindows {
		windowOf(a, ms(20), ms(20), ms(20))
		clock.Advance(defaultAdmitWindow)
	}
	for range int(1 / defaultShareStep) {
		windowOf(a, ms(20), ms(20), ms(20))
		clock.Advance(defaultAdmitWindow)
	}
	if got := a.Share(); got != 1 {
		t.Fatalf("share %v after the floor moved to the new normal, want 1", got)
	}
}

// TestLimiterRestsSlots: with a reduced share, a released slot is taken
// again only after its rest.
func TestLimiterRestsSlots(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	a := newAdmission(2, defaultAdmitWindow, clock.Now)
	windowOf(a, ms(5), ms(5), ms(5))
	clock.Advance(defaultAdmitWindow)
	for range 5 {
		windowOf(a, ms(500), ms(500), ms(500))
		clock.Advance(defaultAdmitWindow)
	}
	l := newLimiter(1, 1, 20*time.Millisecond)
	l.admit = a
	release, err := l.acquire(context.Background(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(100 * time.Millisecond) // held this long: it rests 31 times that, in real time
	release()
	if _, err := l.acquire(context.Background(), "b", false); !isTooMany(err) {
		t.Fatalf("a resting slot was handed out: %v", err)
	}
	poll.Eventually(t, 10*time.Second, "the slot back after its rest", func() error {
		r, err := l.acquire(context.Background(), "b", false)
		if err == nil {
			r()
		}
		return err
	})
}
