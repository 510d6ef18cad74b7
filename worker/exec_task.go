package worker

import (
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/amserver/amserver/api"
)

// execTask is one supervised child process.
type execTask struct {
	mu      sync.Mutex
	a       api.Assignment
	state   string
	message string
	code    int // exit code once a batch job exited
	// errFrom is where the current run's stderr starts in stderr.log,
	// which every run of the task appends to: a failure message quotes
	// this run's last lines, not an earlier run's.
	errFrom int64
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
