package worker

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/amserver/amserver/api"
)

// execTask is one supervised child process.
type execTask struct {
	mu      sync.Mutex
	a       api.Assignment
	state   string
	message string
	code    int // exit code once a batch job exited
	proc    *os.Process
	halted  chan struct{} // closed when the task must stop for good
	done    chan struct{} // closed when the supervisor has returned
	once    sync.Once
}

func (t *execTask) current() api.Assignment {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.a
}

// retarget records a newer assignment; true when role or epoch changed.
func (t *execTask) retarget(a api.Assignment) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := t.a.Role != a.Role || t.a.Epoch != a.Epoch
	t.a = a
	return changed
}

func (t *execTask) set(state, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state, t.message = state, msg
}

func (t *execTask) status() (string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == api.JobAssigned {
		return "", "" // not started yet: nothing to report
	}
	return t.state, t.message
}

func (t *execTask) attach(p *os.Process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.proc = p
}

// signal sends sig to the task's process group.
func (t *execTask) signal(sig syscall.Signal) {
	t.mu.Lock()
	p := t.proc
	t.mu.Unlock()
	if p != nil {
		_ = syscall.Kill(-p.Pid, sig)
	}
}

// halt stops the task: SIGTERM, then SIGKILL after grace; it returns when
// the supervisor has finished.
func (t *execTask) halt(grace time.Duration) {
	t.once.Do(func() { close(t.halted) })
	t.signal(syscall.SIGTERM)
	select {
	case <-t.done:
		return
	case <-time.After(grace):
	}
	t.signal(syscall.SIGKILL)
	<-t.done
}

// startPinned starts cmd with its CPU affinity set to cores. The fork runs
// on a thread locked to this goroutine whose own affinity is set first, so
// the child inherits it from its first instruction (no window in which it
// runs unpinned). The thread is never unlocked, so Go discards it afterwards
// instead of reusing a thread with a narrowed affinity.
func startPinned(cmd *exec.Cmd, cores []int) error {
	if len(cores) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		for _, c := range cores {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			// Cores beyond this host (an inventory larger than the machine)
			// cannot be pinned; run unpinned rather than not at all.
			errc <- cmd.Start()
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
