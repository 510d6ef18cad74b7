package worker

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr is how every exec child starts: in a process group of its own,
// so that a signal reaches the whole workload, and killed when the worker
// dies (a kill -9, a crash, the OOM killer), which a stop at shutdown
// does not cover. The parent-death signal reaches the child alone: the
// rest of its group is killed by Recover at the worker's next start.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// forker starts every exec child from one goroutine locked, for the life
// of the process, to its OS thread. The kernel sends the parent-death
// signal when the *thread* that forked the child exits, not the process,
// and Go forks from whatever thread the caller runs on; a thread exits
// whenever a goroutine that locked it returns (startPinned did so on
// purpose to discard a thread with narrowed affinity). A child forked from
// such a thread would be killed at once. The forker's thread never exits
// before the worker, so the signal means what it says.
var forker struct {
	once sync.Once
	reqs chan forkRequest
}

type forkRequest struct {
	cmd   *exec.Cmd
	cores []int
	done  chan error
}

// startPinned starts cmd on the forker's thread with its CPU affinity set
// to cores (none: unpinned). The thread's affinity is set before the fork,
// so the child is pinned from its first instruction, and restored after.
func startPinned(cmd *exec.Cmd, cores []int) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go forkLoop(forker.reqs)
	})
	req := forkRequest{cmd: cmd, cores: cores, done: make(chan error, 1)}
	forker.reqs <- req
	return <-req.done
}

func forkLoop(reqs <-chan forkRequest) {
	runtime.LockOSThread() // never unlocked, and this never returns: see forker
	var all unix.CPUSet
	restore := unix.SchedGetaffinity(0, &all) == nil
	for req := range reqs {
		req.done <- forkOne(req, &all, restore)
	}
}

func forkOne(req forkRequest, all *unix.CPUSet, restore bool) error {
	if len(req.cores) == 0 {
		return req.cmd.Start()
	}
	var set unix.CPUSet
	for _, c := range req.cores {
		set.Set(c)
	}
	// Cores beyond this host (an inventory larger than the machine) cannot
	// be pinned: the child then runs unpinned rather than not at all.
	pinned := unix.SchedSetaffinity(0, &set) == nil
	err := req.cmd.Start()
	if pinned && restore {
		// Only this goroutine runs on the thread, and Go creates new threads
		// from a template thread when asked from a locked one, so a failed
		// restore narrows nothing else.
		_ = unix.SchedSetaffinity(0, all)
	}
	return err
}
