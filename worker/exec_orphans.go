package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childRecordFile, in an assignment's directory, names the exec child the
// worker last started for it, so that a later run of the worker can kill
// what a crash left behind (see killOrphans).
const childRecordFile = "exec-child.json"

// childRecord identifies one child across a worker restart. A pid alone
// may since have been given to another process: its start time (clock
// ticks after boot, /proc/<pid>/stat) and the boot tell them apart.
type childRecord struct {
	Assignment string `json:"assignment"`
	PID        int    `json:"pid"`
	Start      uint64 `json:"start"`
	Boot       string `json:"boot"`
}

// recordChild writes the record of a child just started for assignment id.
func recordChild(root, id string, pid int) error {
	p, err := readProc(pid)
	if err != nil {
		return err
	}
	b, err := json.Marshal(childRecord{Assignment: id, PID: pid, Start: p.start, Boot: bootID()})
	if err != nil {
		return err
	}
	path := filepath.Join(taskDir(root, id), childRecordFile)
	if err := os.WriteFile(path+".tmp", b, 0o640); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// procInfo is what /proc/<pid>/stat says of a process.
type procInfo struct {
	state byte // 'Z': a zombie, which runs nothing any more
	pgid  int
	start uint64
}

func readProc(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	// The command name, in parentheses, may hold anything: the fields
	// counted start after its last ')', with the state (field 3).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	pgid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procInfo{state: f[0][0], pgid: pgid, start: start}, nil
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// killOrphans kills, with SIGKILL, every exec child an earlier run of the
// worker recorded under root that still runs, with its process group, and
// waits (bounded by ctx and a few seconds) for them to be gone; it removes
// the records. A child whose pid now names another process is left alone.
func killOrphans(ctx context.Context, root string, logger *slog.Logger) error {
	paths, _ := filepath.Glob(filepath.Join(root, "*", childRecordFile))
	if len(paths) == 0 {
		return nil
	}
	boot, procs := bootID(), listProcs()
	var killed []int
	for _, path := range paths {
		var r childRecord
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		switch {
		case err != nil:
			logger.Warn("unreadable exec child record", "path", path, "err", err)
		case r.Boot == boot && r.PID > 0:
			k := r.kill(procs)
			if len(k) > 0 {
				logger.Info("killed the exec workload an earlier run of the worker left running", "assignment", r.Assignment, "pids", k)
			}
			killed = append(killed, k...)
		}
		_ = os.Remove(path)
	}
	return waitGone(ctx, killed)
}

// kill kills what is left of the recorded child: its process group if the
// child is still there (alive or a zombie nobody reaped: its pid, and so
// its group's id, cannot have been reused), else the members of a group
// by that id that started after it and carry its assignment in their
// environment (a shell's pipeline outlives the shell killed by the
// parent-death signal; only the environment tells it from a later group
// that reused the id). It returns the pids it signalled.
func (r childRecord) kill(procs map[int]procInfo) []int {
	leader, err := readProc(r.PID)
	alive := err == nil && leader.start == r.Start
	var pids []int
	if alive {
		_ = syscall.Kill(-r.PID, syscall.SIGKILL)
		_ = syscall.Kill(r.PID, syscall.SIGKILL) // in case it left its group
		pids = append(pids, r.PID)
	}
	for pid, p := range procs {
		if pid == r.PID || p.pgid != r.PID || p.state == 'Z' || p.start < r.Start {
			continue
		}
		if !alive {
			if !hasEnv(pid, "AMSERVER_ASSIGNMENT="+r.Assignment) {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		pids = append(pids, pid)
	}
	return pids
}

// listProcs reads every process's stat.
func listProcs() map[int]procInfo {
	entries, _ := os.ReadDir("/proc")
	procs := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProc(pid); err == nil {
			procs[pid] = p
		}
	}
	return procs
}

// hasEnv reports whether the process's environment holds entry. It is
// unreadable for another user's or an undumpable process, which then
// does not count as the workload's.
func hasEnv(pid int, entry string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(b, []byte{0}) {
		if string(v) == entry {
			return true
		}
	}
	return false
}

// waitGone waits until every pid is gone or a zombie, so that nothing of
// the earlier run still writes to a log the worker is about to reuse.
func waitGone(ctx context.Context, pids []int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left := pids[:0]
		for _, pid := range pids {
			if p, err := readProc(pid); err == nil && p.state != 'Z' {
				left = append(left, pid)
			}
		}
		if pids = left; len(pids) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("exec workloads of an earlier run still running after SIGKILL: %v", pids)
		case <-tick.C:
		}
	}
}
