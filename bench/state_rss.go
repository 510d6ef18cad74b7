package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processRSS is the process's resident set from /proc/self/status (Linux);
// elsewhere it falls back to the memory the Go runtime obtained from the OS.
func processRSS(ms runtime.MemStats) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ms.Sys
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			break
		}
		return kb << 10
	}
	return ms.Sys
}

// stateProcessCPU is the CPU time (user and system) this process has used;
// over a window it is what the code under test spent, garbage collection
// included, however busy the machine was.
func stateProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
