package memlimit

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
)

// runKeeper runs a keeper over samples, one a tick, with relaxed telling
// whether a restore holds the limit off once the nth sample is read (and
// lifts, when given, how many Relax calls there were by then), and
// returns the limits it set, the one set as it stops last.
func runKeeper(t *testing.T, samples []Sample, relaxed func(n int) bool, lifts ...func(n int) uint64) []int64 {
	t.Helper()
	var mu sync.Mutex
	var set []int64
	next := 0
	k := &Keeper{Headroom: 1000, Every: time.Millisecond,
		Read: func() Sample {
			mu.Lock()
			defer mu.Unlock()
			s := samples[min(next, len(samples)-1)]
			next++
			return s
		},
		Set:     func(v int64) int64 { mu.Lock(); defer mu.Unlock(); set = append(set, v); return 0 },
		Relaxed: func() bool { mu.Lock(); defer mu.Unlock(); return relaxed(next) },
	}
	if len(lifts) > 0 {
		k.Lifts = func() uint64 { mu.Lock(); defer mu.Unlock(); return lifts[0](next) }
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	poll.Eventually(t, 10*time.Second, "every sample read", func() error {
		mu.Lock()
		defer mu.Unlock()
		return poll.Check(next > len(samples), "%d of %d samples read", next, len(samples))
	})
	cancel()
	<-done
	return set
}

// TestKeeperFollowsCollections: the limit is set once per finished
// collection, to live + non-heap + headroom, and lifted when the keeper
// stops.
func TestKeeperFollowsCollections(t *testing.T) {
	samples := []Sample{
		{Cycles: 1, Live: 100, NonHeap: 10},
		{Cycles: 1, Live: 100, NonHeap: 10}, // no new collection: not set again
		{Cycles: 2, Live: 300, NonHeap: 20},
		{Cycles: 3, Live: 50, NonHeap: 20}, // the state shrank: so does the limit
	}
	set := runKeeper(t, samples, func(int) bool { return false })
	if want := []int64{1110, 1320, 1070, noLimit}; !slices.Equal(set, want) {
		t.Fatalf("limits set %v, want %v", set, want)
	}
}

// TestKeeperLiftsTheLimitWhileRelaxed: a collection that ends while a
// restore holds the limit off sets no limit; the first one after sets it
// from that collection's live heap again.
func TestKeeperLiftsTheLimitWhileRelaxed(t *testing.T) {
	samples := []Sample{
		{Cycles: 1, Live: 100, NonHeap: 10},
		{Cycles: 2, Live: 400, NonHeap: 10}, // during a restore
		{Cycles: 3, Live: 500, NonHeap: 10}, // during a restore
		{Cycles: 4, Live: 200, NonHeap: 10}, // after it
	}
	set := runKeeper(t, samples, func(n int) bool { return n == 2 || n == 3 })
	if want := []int64{1110, noLimit, noLimit, 1210, noLimit}; !slices.Equal(set, want) {
		t.Fatalf("limits set %v, want %v", set, want)
	}
}

// TestKeeperSetsTheLimitOnRelease: the limit comes back as soon as the
// last Relax is released, from the latest collection, without waiting for
// the next one: until then the heap could grow to twice its live part.
func TestKeeperSetsTheLimitOnRelease(t *testing.T) {
	samples := []Sample{
		{Cycles: 1, Live: 100, NonHeap: 10},
		{Cycles: 1, Live: 100, NonHeap: 10}, // a restore holds the limit off
		{Cycles: 1, Live: 100, NonHeap: 10}, // released, no collection since
		{Cycles: 1, Live: 100, NonHeap: 10},
	}
	set := runKeeper(t, samples, func(n int) bool { return n == 2 })
	if want := []int64{1110, 1110, noLimit}; !slices.Equal(set, want) {
		t.Fatalf("limits set %v, want %v", set, want)
	}
	// A Relax released between two looks is seen by its count.
	set = runKeeper(t, samples, func(int) bool { return false }, func(n int) uint64 { return uint64(min(n/3, 1)) })
	if want := []int64{1110, 1110, noLimit}; !slices.Equal(set, want) {
		t.Fatalf("limits set %v after an unseen Relax, want %v", set, want)
	}
}

// TestReadSamplesTheRuntime: the runtime's metrics are found (a live heap
// after a collection, memory besides the heap).
func TestReadSamplesTheRuntime(t *testing.T) {
	keep := make([]byte, 8<<20)
	runtime.GC()
	s := Read()
	if s.Cycles == 0 || s.Live < uint64(len(keep)) || s.NonHeap == 0 {
		t.Fatalf("sample %+v after a collection with 8 MiB live", s)
	}
	runtime.KeepAlive(keep)
}

// TestRelaxCounts: the limit stays lifted until every Relax is released,
// and releasing one twice counts once.
func TestRelaxCounts(t *testing.T) {
	if Relaxed() {
		t.Fatal("relaxed before any Relax")
	}
	a, b := Relax(), Relax()
	a()
	a()
	if !Relaxed() {
		t.Fatal("one of two released (twice) and the limit is back")
	}
	b()
	if Relaxed() {
		t.Fatal("both released and the limit is still lifted")
	}
}
