package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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
	dir := os.Getenv("AMBENCH_WRITE_CPUPROFILE")
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-c%d", system, conc))
	if err := writeHeapProfile(name + ".heap-start"); err != nil {
		return nil, err
	}
	f, err := os.Create(name + ".pprof")
	if err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return errors.Join(f.Close(), writeHeapProfile(name+".heap-end"))
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
