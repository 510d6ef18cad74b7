package bench

import (
	"syscall"
	"time"
)

// writeProcessCPU is the CPU time this process has used so far (user and
// system). Every cluster of the write suite runs inside this process, so
// the difference over a window is what the system under test (and its
// client) spent on those writes.
func writeProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
