// Package memlimit bounds how far a server's Go heap grows past its live
// part. The Go collector lets the heap grow to twice what was live after
// the last collection (GOGC=100): with a 500 MB state that is 500 MB of
// garbage before a collection starts, the resident set a read load adds.
// Keeper sets the runtime's soft memory limit to the live heap plus the
// runtime's other memory plus a fixed headroom after every collection, so
// a large state collects once that headroom is used and a small one still
// follows GOGC (its goal is below the limit). The limit follows the live
// heap up and down, so a state that grows never runs into it for long.
// It trades the collector's CPU for memory: a headroom well below the live
// heap makes collections more frequent (with a 500 MB heap and 256 MiB,
// half as often again, which cost heartbeats on two shared cores); near
// the live heap it costs little (docs/performance.md, "Load held"). Servers
// run it with --heap-headroom-mib, 256 unless told otherwise.
package memlimit

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is what the keeper reads from the runtime.
type Sample struct {
	Cycles  uint64 // completed collections
	Live    uint64 // heap marked live by the last collection
	NonHeap uint64 // runtime memory other than the heap (stacks, metadata)
}

// Limit is the soft limit for a sample: live + non-heap + headroom.
func Limit(s Sample, headroom uint64) int64 {
	return int64(s.Live + s.NonHeap + headroom)
}

var names = []string{
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
}

// Read samples the runtime.
func Read() Sample {
	ms := make([]metrics.Sample, len(names))
	for i, n := range names {
		ms[i].Name = n
	}
	metrics.Read(ms)
	v := func(i int) uint64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return ms[i].Value.Uint64()
	}
	total, heap := v(2), v(3)+v(4)+v(5)+v(6)
	return Sample{Cycles: v(0), Live: v(1), NonHeap: total - min(total, heap)}
}

// noLimit is the runtime's default soft limit: none.
const noLimit = int64(^uint64(0) >> 1)

// Keeper keeps the soft memory limit at the live heap plus Headroom.
type Keeper struct {
	Headroom uint64
	Every    time.Duration // how often it looks for a finished collection
	Read     func() Sample
	Set      func(int64) int64 // debug.SetMemoryLimit
	Relaxed  func() bool       // the limit is lifted while true (Relax)
	// Lifts counts the Relax calls so far: a change says the limit was
	// lifted since, even by a Relax released between two looks.
	Lifts func() uint64
}

// relaxed counts the callers between Relax and its release; keeping says a
// keeper started by Start runs in this process.
var (
	relaxed atomic.Int32
	lifts   atomic.Uint64
	keeping atomic.Bool
)

// Relax lifts the soft limit until release is called. A snapshot restore
// builds the new state beside the old one, so the live heap passes twice
// the state's; a headroom fixed in bytes then makes the collector run
// every headroom's worth of it (a 100,000-bundle restore took 1.9 s with
// 256 MiB against 1.1 s without). The keeper sets the limit again as soon
// as it sees the last release (within its Every), from the latest
// collection: waiting for the next one left the limit off for as long as
// no collection came (docs/performance.md measured no RSS difference in a
// restore followed by allocation; the peak is the restore's). A keeper that
// read Relaxed just before this call may set the limit once more: the
// next collection lifts it again. Without a running keeper (off, or a
// GOMEMLIMIT of the operator's) it changes nothing.
func Relax() (release func()) {
	relaxed.Add(1)
	lifts.Add(1)
	if keeping.Load() {
		debug.SetMemoryLimit(noLimit)
	}
	var once sync.Once
	return func() { once.Do(func() { relaxed.Add(-1) }) }
}

// Relaxed says whether some Relax is not yet released.
func Relaxed() bool { return relaxed.Load() > 0 }

// Start runs a keeper with headroom until ctx ends; headroom 0, or a
// GOMEMLIMIT in the environment (the operator's choice), leaves the
// runtime's limit alone.
func Start(ctx context.Context, headroom uint64, logger *slog.Logger) {
	if headroom == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	logger.Info("heap headroom: the soft memory limit follows the live heap", "headroom_mib", headroom>>20)
	k := &Keeper{
		Headroom: headroom, Every: 100 * time.Millisecond, Read: Read, Set: debug.SetMemoryLimit,
		Relaxed: Relaxed, Lifts: lifts.Load,
	}
	keeping.Store(true)
	go func() {
		defer keeping.Store(false)
		k.Run(ctx)
	}()
}

// Run sets the limit after every collection, and once a Relax is
// released, until ctx ends; then it lifts it.
func (k *Keeper) Run(ctx context.Context) {
	tick := time.NewTicker(k.Every)
	defer tick.Stop()
	defer k.Set(noLimit)
	var seen, lifted uint64
	owed := false // a Relax lifted the limit since the keeper last set one
	for {
		s := k.Read()
		if k.Lifts != nil {
			if n := k.Lifts(); n != lifted {
				lifted, owed = n, true
			}
		}
		switch {
		case k.Relaxed != nil && k.Relaxed():
			owed = true
			if s.Cycles != seen {
				k.Set(noLimit)
			}
		case s.Cycles != seen || owed:
			k.Set(Limit(s, k.Headroom))
			owed = false
		}
		seen = s.Cycles
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
