package worker

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// memLimiter enforces an exec job's memoryLimitMiB with cgroup v2: the
// process starts (CLONE_INTO_CGROUP) in a child of the worker's own
// cgroup whose memory.max is the limit and memory.swap.max 0. That needs
// cgroup v2 with the memory controller delegated to the worker's cgroup
// (systemd's Delegate=yes, or a container given its own cgroup
// namespace); without it, limits are not enforced for exec jobs, and the
// worker says so once. Docker, compose and wasm enforce limits on their own.
type memLimiter struct {
	base   string // the worker's cgroup directory; "" when limits cannot be enforced
	reason string // why not, when base is ""
	logger *slog.Logger
	once   sync.Once
}

// cgroupRoot is where cgroup v2 is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// newMemLimiter finds the worker's cgroup under root from selfCgroup (the
// contents of /proc/self/cgroup) and checks that children can get memory
// limits, enabling the memory controller for them if it may.
func newMemLimiter(root, selfCgroup string, logger *slog.Logger) *memLimiter {
	l := &memLimiter{logger: logger}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		l.reason = "cgroup v2 is not mounted at " + root
		return l
	}
	rel, ok := unifiedPath(selfCgroup)
	if !ok {
		l.reason = "the worker's cgroup v2 path is not in /proc/self/cgroup"
		return l
	}
	base := filepath.Join(root, filepath.Clean("/"+rel))
	if err := enableMemory(base); err != nil {
		l.reason = err.Error()
		return l
	}
	l.base = base
	return l
}

// detectMemLimiter is newMemLimiter for this process.
func detectMemLimiter(logger *slog.Logger) *memLimiter {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return &memLimiter{logger: logger, reason: "cannot read /proc/self/cgroup: " + err.Error()}
	}
	return newMemLimiter(cgroupRoot, string(self), logger)
}

// unifiedPath is the cgroup v2 entry ("0::/path") of /proc/self/cgroup.
func unifiedPath(selfCgroup string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(selfCgroup))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return p, true
		}
	}
	return "", false
}

// enableMemory makes sure base's children may have memory limits.
func enableMemory(base string) error {
	ctl := filepath.Join(base, "cgroup.subtree_control")
	have, err := os.ReadFile(ctl)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", ctl, err)
	}
	if slices.Contains(strings.Fields(string(have)), "memory") {
		return nil
	}
	if err := os.WriteFile(ctl, []byte("+memory"), 0o644); err != nil {
		return fmt.Errorf("the memory controller is not delegated to %s (writing +memory to its cgroup.subtree_control: %w)", base, err)
	}
	return nil
}

// taskCgroup is one task's cgroup, open for CLONE_INTO_CGROUP.
type taskCgroup struct {
	dir string
	f   *os.File
}

// enter creates (or reuses) the task's cgroup with its limit and opens it.
// When limits cannot be enforced it returns nil after logging, once, why.
func (l *memLimiter) enter(id string, mib int64) *taskCgroup {
	if l.base == "" {
		l.notEnforced(errors.New(l.reason))
		return nil
	}
	dir := filepath.Join(l.base, "amserver-"+taskName(id))
	cg, err := openTaskCgroup(dir, mib)
	if err != nil {
		l.notEnforced(err)
		return nil
	}
	return cg
}

func openTaskCgroup(dir string, mib int64) (*taskCgroup, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	limit := strconv.FormatInt(mib<<20, 10)
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(limit), 0o644); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("set memory.max: %w", err)
	}
	// Without swap accounting the file is absent: RAM is limited anyway.
	_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	f, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &taskCgroup{dir: dir, f: f}, nil
}

// notEnforced logs, once per driver, that exec memory limits are not
// enforced and why.
func (l *memLimiter) notEnforced(err error) {
	l.once.Do(func() {
		l.logger.Warn("exec jobs' memoryLimitMiB is not enforced on this node (docker, compose and wasm jobs' is)", "reason", err)
	})
}

// release closes the cgroup and removes it once its processes are gone.
func (c *taskCgroup) release() {
	if c == nil {
		return
	}
	_ = c.f.Close()
	_ = os.Remove(c.dir) // fails while a straggler lives; the next run reuses it
}
