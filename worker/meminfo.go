package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// DetectMemoryMiB is the host's MemTotal from /proc/meminfo in MiB, what a
// worker registers as totalMemoryMiB unless told otherwise; 0 when it
// cannot be read (the node then takes no job that requests memory).
func DetectMemoryMiB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	mib, err := parseMemTotal(f)
	if err != nil {
		return 0
	}
	return mib
}

// parseMemTotal reads the "MemTotal: N kB" line of a meminfo file.
func parseMemTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("meminfo: malformed MemTotal line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		switch {
		case err != nil:
			return 0, fmt.Errorf("meminfo: MemTotal: %w", err)
		case kb < 0:
			return 0, fmt.Errorf("meminfo: negative MemTotal %d", kb)
		}
		return kb / 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	return 0, errors.New("meminfo: no MemTotal line")
}
