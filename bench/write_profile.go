package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

// writeProfile starts the profiles of one measured window when
// AMBENCH_WRITE_CPUPROFILE names a directory: <system>-c<conc>.pprof
// there is the window's CPU, and <system>-c<conc>.heap-{start,end} are
// heap profiles at its ends, whose difference (pprof -base start end,
// -sample_index=alloc_space) is what the window allocated. Each covers
// the whole process (every cluster of the suite and its client), so a
// change to the write path starts from where that window's CPU and
// garbage went. The returned stop ends them; without the variable both
// are no-ops.
func writeProfile(system string, conc int) (stop func() error, err error) {
	stopTrace, err := writeTrace(system, conc)
	if err != nil {
		return nil, err
	}
	dir := os.Getenv("AMBENCH_WRITE_CPUPROFILE")
	if dir == "" {
		return stopTrace, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-c%d", system, conc))
	if err := writeHeapProfile(name + ".heap-start"); err != nil {
		return nil, errors.Join(err, stopTrace())
	}
	f, err := os.Create(name + ".pprof")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err), stopTrace())
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err), f.Close(), stopTrace())
	}
	return func() error {
		pprof.StopCPUProfile()
		return errors.Join(f.Close(), writeHeapProfile(name+".heap-end"), stopTrace())
	}, nil
}

// writeTraceSpan is how much of a window AMBENCH_WRITE_TRACE records: a
// trace of a busy window grows by megabytes a second, and a few seconds
// hold thousands of writes.
const writeTraceSpan = 3 * time.Second

// writeTrace starts an execution trace of the first writeTraceSpan of one
// measured window when AMBENCH_WRITE_TRACE names a directory:
// <system>-c<conc>.trace there. A CPU profile shows what runs; the trace
// shows what waits, and `go tool trace -pprof=sched` lists who woke the
// goroutines that then waited for a core (docs/performance.md, fifteenth
// session). The returned stop ends it early; without the variable it is a
// no-op.
func writeTrace(system string, conc int) (stop func() error, err error) {
	dir := os.Getenv("AMBENCH_WRITE_TRACE")
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_TRACE: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-c%d.trace", system, conc)))
	if err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_TRACE: %w", err)
	}
	if err := trace.Start(f); err != nil {
		return nil, errors.Join(fmt.Errorf("AMBENCH_WRITE_TRACE: %w", err), f.Close())
	}
	var once sync.Once
	var closeErr error
	end := func() {
		once.Do(func() {
			trace.Stop()
			closeErr = f.Close()
		})
	}
	timer := time.AfterFunc(writeTraceSpan, end)
	return func() error {
		timer.Stop()
		end()
		return closeErr
	}, nil
}

// writeHeapProfile writes the allocation profile as of the last
// collection: it runs one, so the counts include the window's end.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	return errors.Join(err, f.Close())
}
