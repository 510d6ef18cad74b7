package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// writeProfile starts a CPU profile of one measured window when
// AMBENCH_WRITE_CPUPROFILE names a directory: <system>-c<conc>.pprof
// there, the whole process (every cluster of the suite and its client),
// so a change to the write path starts from where that window's CPU went.
// The returned stop ends it; it is a no-op without the variable.
func writeProfile(system string, conc int) (stop func() error, err error) {
	dir := os.Getenv("AMBENCH_WRITE_CPUPROFILE")
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-c%d.pprof", system, conc)))
	if err != nil {
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("AMBENCH_WRITE_CPUPROFILE: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
