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
	if kb, ok := procStatus("VmRSS:"); ok {
		return kb << 10
	}
	return ms.Sys
}

// peakRSS is the process's resident high-water mark (VmHWM), 0 if unknown.
func peakRSS() uint64 {
	kb, _ := procStatus("VmHWM:")
	return kb << 10
}

// resetPeakRSS starts the high-water mark again from the current resident
// set (Linux clear_refs 5), so a peak belongs to what follows; best effort.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// procStatus reads one kB field of /proc/self/status.
func procStatus(field string) (uint64, bool) { return procStatusFile("/proc/self/status", field) }

// procStatusOf reads one kB field of another process's status.
func procStatusOf(pid int, field string) (uint64, bool) {
	return procStatusFile("/proc/"+strconv.Itoa(pid)+"/status", field)
}

func procStatusFile(path, field string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb, err == nil
	}
	return 0, false
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

// currentRSS is the process's resident set now (VmRSS), 0 if unknown.
func currentRSS() uint64 {
	kb, _ := procStatus("VmRSS:")
	return kb << 10
}
