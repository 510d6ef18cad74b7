package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/raftstore"
)

// The "write" suite: committed writes per second at several concurrencies,
// amserver (bundle creates over HTTP) side by side with an embedded etcd
// cluster and a bare hashicorp/raft cluster doing writes of the same size.
func init() { Suites["write"] = runWrite }

var writeConcurrencies = []int{1, 16, 64}

// writeTarget is one system under test: a running 3-server cluster that
// can commit one write of the payload size.
type writeTarget interface {
	// write commits one write for worker w (0..conc-1) with sequence seq.
	write(ctx context.Context, w int, seq int64) error
	// prepare readies the clients for conc concurrent writers.
	prepare(conc int) error
	close() error
}

// writeSystem describes how to start a target and how to label its rows.
type writeSystem struct {
	name  string // "amserver", "etcd", "raw-raft"
	verb  string // row name prefix: "creates/s"
	note  string
	start func(ctx context.Context, o Options, dir string, payload int) (writeTarget, error)
}

// writeSystems selects the systems to measure: all of them, or (for
// profiling one alone) the comma list in AMBENCH_WRITE_SYSTEMS.
func writeSystems(only string, store raftstore.LogStore) ([]writeSystem, error) {
	all := []writeSystem{amserverWriteSystem(store), etcdWriteSystem(), rawRaftWriteSystem(store)}
	if only == "" {
		return all, nil
	}
	var out []writeSystem
	for _, name := range strings.Split(only, ",") {
		i := slices.IndexFunc(all, func(s writeSystem) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("AMBENCH_WRITE_SYSTEMS: unknown system %q (amserver, etcd, raw-raft)", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// writeTiming is the warm-up and measured window of each measurement.
func writeTiming(o Options) (warmup, window time.Duration) {
	if o.Quick {
		return time.Second, 3 * time.Second
	}
	return 2 * time.Second, 10 * time.Second
}

// writeSpec is the bundle every create submits (as the agent benchmark
// does): one job, half a unit of capacity, in a pool without nodes.
func writeSpec(seq int64) api.BundleSpec {
	return api.BundleSpec{
		ID: fmt.Sprintf("b%09d", seq), Pool: "bench",
		Jobs: []api.Job{{Name: "enc", Requirements: api.Requirements{Capacity: 0.5}}},
	}
}

// writeSpecJSON is the JSON of writeSpec(seq); its length is the payload size
// the peers write.
func writeSpecJSON(seq int64) []byte {
	b, err := json.Marshal(writeSpec(seq))
	if err != nil {
		panic(fmt.Sprintf("marshal bench spec: %v", err)) // a fixed struct always marshals
	}
	return b
}

// writeLogStore is the Raft log store of the amserver and raw-raft
// clusters: AMBENCH_RAFT_LOG_STORE (wal or bolt), else the one a new
// server gets (wal); bolt measures a server that kept an older data
// directory.
func writeLogStore() (raftstore.LogStore, error) {
	ls, err := raftstore.ParseLogStore(os.Getenv("AMBENCH_RAFT_LOG_STORE"))
	if err != nil {
		return "", fmt.Errorf("AMBENCH_RAFT_LOG_STORE: %w", err)
	}
	if ls == raftstore.LogStoreAuto {
		ls = raftstore.LogStoreWAL
	}
	return ls, nil
}

func runWrite(ctx context.Context, o Options) ([]Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	payload := len(writeSpecJSON(1))
	store, err := writeLogStore()
	if err != nil {
		return nil, err
	}
	systems, err := writeSystems(os.Getenv("AMBENCH_WRITE_SYSTEMS"), store)
	if err != nil {
		return nil, err
	}
	running, errs := startWriteSystems(ctx, o, systems, payload)
	defer func() {
		for _, r := range running {
			if err := r.t.close(); err != nil {
				o.Logger.Warn("stopping cluster", "system", r.sys.name, "err", err)
			}
		}
	}()
	rows := map[string][]Result{}
	meas := map[string]map[int]writeMeasurement{} // system → concurrency → window
	// Concurrency outside, systems inside: the numbers a ratio compares are
	// measured back to back, so a noisy neighbour on the machine (or the
	// disk's mood) hits both sides alike.
	for _, conc := range writeConcurrencies {
		for _, r := range running {
			if r.failed || ctx.Err() != nil {
				continue
			}
			row, m, err := r.measure(ctx, o, conc, payload)
			if err != nil {
				r.failed = true
				errs = append(errs, fmt.Errorf("%s c=%d: %w", r.sys.name, conc, err))
				continue
			}
			rows[r.sys.name] = append(rows[r.sys.name], row)
			if meas[r.sys.name] == nil {
				meas[r.sys.name] = map[int]writeMeasurement{}
			}
			meas[r.sys.name][conc] = m
		}
	}
	direct, err := measureDirectAmserver(ctx, o, running)
	if err != nil {
		errs = append(errs, fmt.Errorf("amserver direct c=1: %w", err))
	}
	var rs []Result
	for _, sys := range systems {
		rs = append(rs, rows[sys.name]...)
	}
	rs = append(rs, writeRatioRows(meas)...)
	rs = append(rs, writeGoalRows(meas["amserver"])...)
	rs = append(rs, writeDirectRows(direct)...)
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return rs, errors.Join(errs...)
}

// runningWrite is a started system and its write sequence.
type runningWrite struct {
	sys    writeSystem
	t      writeTarget
	seq    atomic.Int64
	failed bool
}

// startWriteSystems starts every system up front (an idle cluster only
// heartbeats); one that fails to start is reported and left out.
func startWriteSystems(ctx context.Context, o Options, systems []writeSystem, payload int) ([]*runningWrite, []error) {
	var out []*runningWrite
	var errs []error
	for _, sys := range systems {
		o.Logger.Info("starting cluster", "system", sys.name, "payload", payload)
		t, err := sys.start(ctx, o, filepath.Join(o.Dir, sys.name), payload)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: start: %w", sys.name, err))
			continue
		}
		out = append(out, &runningWrite{sys: sys, t: t})
	}
	return out, errs
}

// measure runs one warm-up and window at concurrency conc.
func (r *runningWrite) measure(ctx context.Context, o Options, conc, payload int) (Result, writeMeasurement, error) {
	if err := r.t.prepare(conc); err != nil {
		return Result{}, writeMeasurement{}, fmt.Errorf("prepare: %w", err)
	}
	warmup, window := writeTiming(o)
	m, err := measureWrites(ctx, r.t, conc, warmup, window, &r.seq, func() (func() error, error) {
		return writeProfile(r.sys.name, conc)
	})
	if err != nil {
		return Result{}, writeMeasurement{}, err
	}
	o.Logger.Info("measured", "system", r.sys.name, "c", conc, "ops/s", int(m.rate()), "errors", m.errors)
	note := fmt.Sprintf("%d ops in %s, CPU %.2f ms/op (%.2f cores), p50 %.2f ms",
		m.ops, m.elapsed.Round(time.Millisecond), float64(m.cpuPerOp().Microseconds())/1000,
		m.cpu.Seconds()/m.elapsed.Seconds(), float64(m.p50.Microseconds())/1000)
	if conc == writeConcurrencies[0] { // the setup once per system keeps the table readable
		note += fmt.Sprintf("; %s; %d B payload", r.sys.note, payload)
	}
	if m.errors > 0 {
		note += fmt.Sprintf("; %d failed writes not counted (first: %v)", m.errors, m.firstErr)
	}
	return Result{
		Suite: "write", Name: fmt.Sprintf("%s c=%d %s", r.sys.verb, conc, r.sys.name),
		Value: m.rate(), Unit: "ops/s", Note: note,
	}, m, nil
}

// writeMeasurement is what one window counted.
type writeMeasurement struct {
	ops, errors int64
	elapsed     time.Duration
	cpu         time.Duration // process CPU time over the window
	p50         time.Duration // median latency of the writes acknowledged in the window
	firstErr    error
}

// cpuPerOp is the process's CPU time per acknowledged write: all three
// servers and the client share the machine's cores, so at high concurrency
// this, not the disk, is usually what caps throughput.
func (m writeMeasurement) cpuPerOp() time.Duration {
	if m.ops == 0 {
		return 0
	}
	return m.cpu / time.Duration(m.ops)
}

func (m writeMeasurement) rate() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.ops) / m.elapsed.Seconds()
}

// measure runs conc writers for warmup+window and counts the writes
// acknowledged inside the window. Writers are never cancelled mid-write:
// the window closes, then the in-flight writes finish uncounted.
// profile, when not nil, starts a profile of the window alone.
func measureWrites(ctx context.Context, t writeTarget, conc int, warmup, window time.Duration, seq *atomic.Int64,
	profile func() (stop func() error, err error)) (writeMeasurement, error) {
	var counting, stop atomic.Bool
	var ops, errs atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	lats := make([][]time.Duration, conc) // each writer's own, merged after
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				began := time.Now()
				err := t.write(ctx, w, seq.Add(1))
				if !counting.Load() {
					continue
				}
				if err != nil {
					errs.Add(1)
					errOnce.Do(func() { firstErr = err })
					continue
				}
				ops.Add(1)
				lats[w] = append(lats[w], time.Since(began))
			}
		}()
	}
	writeSleep(ctx, warmup)
	stopProfile := func() error { return nil }
	if profile != nil {
		var err error
		if stopProfile, err = profile(); err != nil {
			stop.Store(true)
			wg.Wait()
			return writeMeasurement{}, err
		}
	}
	counting.Store(true)
	start, cpu0 := time.Now(), writeProcessCPU()
	writeSleep(ctx, window)
	counting.Store(false)
	elapsed, cpu := time.Since(start), writeProcessCPU()-cpu0
	profErr := stopProfile()
	stop.Store(true)
	wg.Wait()
	if profErr != nil {
		return writeMeasurement{}, profErr
	}
	if err := ctx.Err(); err != nil {
		return writeMeasurement{}, fmt.Errorf("measurement interrupted: %w", err)
	}
	m := writeMeasurement{ops: ops.Load(), errors: errs.Load(), elapsed: elapsed, cpu: cpu, p50: median(slices.Concat(lats...)), firstErr: firstErr}
	if m.ops == 0 && m.errors > 0 {
		return m, fmt.Errorf("every write failed: %w", firstErr)
	}
	return m, nil
}

func writeSleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
