package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
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

func runWrite(ctx context.Context, o Options) ([]Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	payload := len(writeSpecJSON(1))
	systems := []writeSystem{amserverWriteSystem(), etcdWriteSystem(), rawRaftWriteSystem()}
	var rs []Result
	var errs []error
	tput := map[string]map[int]float64{} // system → concurrency → ops/s
	for _, sys := range systems {
		if ctx.Err() != nil {
			return rs, errors.Join(append(errs, ctx.Err())...)
		}
		rows, by, err := measureWriteSystem(ctx, o, sys, payload)
		rs = append(rs, rows...)
		tput[sys.name] = by
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sys.name, err))
		}
	}
	rs = append(rs, writeRatioRows(tput)...)
	return rs, errors.Join(errs...)
}

// measureWriteSystem starts one system, measures every concurrency and stops
// it again, so that no two clusters compete for the cores and the disk.
func measureWriteSystem(ctx context.Context, o Options, sys writeSystem, payload int) ([]Result, map[int]float64, error) {
	log := o.Logger.With("system", sys.name)
	log.Info("starting cluster", "payload", payload)
	t, err := sys.start(ctx, o, filepath.Join(o.Dir, sys.name), payload)
	if err != nil {
		return nil, nil, fmt.Errorf("start: %w", err)
	}
	defer func() {
		if err := t.close(); err != nil {
			log.Warn("stopping cluster", "err", err)
		}
	}()
	warmup, window := writeTiming(o)
	var rs []Result
	by := map[int]float64{}
	var seq atomic.Int64
	for _, conc := range writeConcurrencies {
		if err := t.prepare(conc); err != nil {
			return rs, by, fmt.Errorf("prepare c=%d: %w", conc, err)
		}
		m, err := measureWrites(ctx, t, conc, warmup, window, &seq)
		if err != nil {
			return rs, by, fmt.Errorf("c=%d: %w", conc, err)
		}
		log.Info("measured", "c", conc, "ops/s", int(m.rate()), "errors", m.errors)
		by[conc] = m.rate()
		note := fmt.Sprintf("%s; %d B payload; %d ops in %s", sys.note, payload, m.ops, m.elapsed.Round(time.Millisecond))
		if m.errors > 0 {
			note += fmt.Sprintf("; %d failed writes not counted (first: %v)", m.errors, m.firstErr)
		}
		rs = append(rs, Result{
			Suite: "write", Name: fmt.Sprintf("%s c=%d %s", sys.verb, conc, sys.name),
			Value: m.rate(), Unit: "ops/s", Note: note,
		})
	}
	return rs, by, nil
}

// writeMeasurement is what one window counted.
type writeMeasurement struct {
	ops, errors int64
	elapsed     time.Duration
	firstErr    error
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
func measureWrites(ctx context.Context, t writeTarget, conc int, warmup, window time.Duration, seq *atomic.Int64) (writeMeasurement, error) {
	var counting, stop atomic.Bool
	var ops, errs atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
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
			}
		}()
	}
	writeSleep(ctx, warmup)
	counting.Store(true)
	start := time.Now()
	writeSleep(ctx, window)
	counting.Store(false)
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return writeMeasurement{}, fmt.Errorf("measurement interrupted: %w", err)
	}
	m := writeMeasurement{ops: ops.Load(), errors: errs.Load(), elapsed: elapsed, firstErr: firstErr}
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

// writeRatioRows compares amserver with each peer at every concurrency; only
// c=64 carries the targets.
func writeRatioRows(tput map[string]map[int]float64) []Result {
	targets := map[string]float64{"etcd": 1.0, "raw-raft": 0.8}
	var rs []Result
	for _, peer := range []string{"etcd", "raw-raft"} {
		for _, conc := range writeConcurrencies {
			a, okA := tput["amserver"][conc]
			p, okP := tput[peer][conc]
			if !okA || !okP || p <= 0 {
				continue
			}
			r := Result{
				Suite: "write", Name: fmt.Sprintf("amserver/%s c=%d", peer, conc), Value: a / p, Unit: "ratio",
				Note: fmt.Sprintf("%.0f vs %.0f ops/s", a, p),
			}
			if conc == 64 {
				r.Target = fmt.Sprintf(">= %.1f", targets[peer])
				r.Met = Met(r.Value >= targets[peer])
			}
			rs = append(rs, r)
		}
	}
	return rs
}
