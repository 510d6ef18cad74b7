package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/amserver/amserver/api"
)

// ExecDriver runs each assignment's launch command as a child process:
// pinned to its cores, its memory limited where cgroup v2 allows
// (memLimiter), with its bundle, job, role, epoch and GPU in the
// environment, restarted with backoff when it exits, stopped when desired.
type ExecDriver struct {
	logger    *slog.Logger
	limiter   *memLimiter
	stateDir  string        // assignments' directories: role/epoch file, stdout.log, stderr.log
	stopGrace time.Duration // SIGTERM → SIGKILL delay
	// stableAfter is how long a run that follows a failure must stay up
	// before the task reads running again (restartPolicy).
	stableAfter time.Duration
	events      chan TaskEvent
	retain      *retainStore // nil: a batch job's output goes with its task

	mu    sync.Mutex
	tasks map[string]*execTask
}

var _ Driver = (*ExecDriver)(nil)

// NewExecDriver keeps each task's files in its directory under stateDir.
func NewExecDriver(stateDir string, logger *slog.Logger) (*ExecDriver, error) {
	if err := os.MkdirAll(stateDir, 0o750); err != nil {
		return nil, fmt.Errorf("exec driver state dir: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ExecDriver{
		logger: logger, limiter: detectMemLimiter(logger), stateDir: stateDir, stopGrace: 10 * time.Second, stableAfter: defaultStableAfter,
		events: make(chan TaskEvent, 256), tasks: map[string]*execTask{},
	}, nil
}

// Events implements Driver.
func (d *ExecDriver) Events() <-chan TaskEvent { return d.events }

// Recover implements Driver. A child process is stopped at shutdown and
// killed by its parent-death signal when the worker dies, but that signal
// reaches neither the rest of its process group (a shell's pipeline) nor a
// child that ignored it or had not received it yet: Recover kills, with
// their groups, the children an earlier run recorded that still run, so
// that none runs twice next to the one the worker starts again. Nothing is
// adopted: a child's pipes and exit status belonged to the dead worker.
func (d *ExecDriver) Recover(ctx context.Context) error {
	return killOrphans(ctx, d.stateDir, d.logger)
}

// Ensure implements Driver.
func (d *ExecDriver) Ensure(_ context.Context, a api.Assignment) (string, string) {
	d.mu.Lock()
	t := d.tasks[a.ID]
	d.mu.Unlock()
	if a.Desired != api.DesiredRun {
		_ = d.stop(a.ID, stopRetire)
		return api.JobStopped, ""
	}
	if len(legacyJob(a.Launch).Command) == 0 {
		return api.JobFailed, "exec driver: the assignment has no launch command"
	}
	if t == nil {
		t = d.start(a)
	} else if t.retarget(a) {
		if err := d.writeState(a); err != nil {
			d.logger.Warn("writing role file failed", "assignment", a.ID, "err", err)
		}
		t.signal(syscall.SIGHUP) // role or epoch moved: tell the workload to re-read its file
	}
	return t.status()
}

func (d *ExecDriver) start(a api.Assignment) *execTask {
	t := &execTask{a: a, state: api.JobAssigned, halted: make(chan struct{}), done: make(chan struct{})}
	d.mu.Lock()
	d.tasks[a.ID] = t
	d.mu.Unlock()
	if err := d.writeState(a); err != nil {
		d.logger.Warn("writing role file failed", "assignment", a.ID, "err", err)
	}
	go d.supervise(t)
	return t
}

func (d *ExecDriver) forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tasks, id)
}

// Stop implements Driver. The stop grace bounds it, not ctx: a child is
// never left behind.
func (d *ExecDriver) Stop(_ context.Context, id string) error { return d.stop(id, stopRemove) }

// retire implements retirer.
func (d *ExecDriver) retire(_ context.Context, id string) error { return d.stop(id, stopRetire) }

// stopToRestart implements restarter.
func (d *ExecDriver) stopToRestart(_ context.Context, id string) error {
	return d.stop(id, stopRestart)
}

// stop halts the task and, unless it is to run again (stopRestart),
// removes its directory; a batch task's last stop (stopRetire) first
// moves its output to the retain store. The output is kept before the
// task is forgotten, so that the log endpoint finds it in one place or the
// other.
func (d *ExecDriver) stop(id string, mode stopMode) error {
	d.mu.Lock()
	t := d.tasks[id]
	d.mu.Unlock()
	if t == nil {
		return nil
	}
	t.halt(d.stopGrace)
	dir := taskDir(d.stateDir, id)
	if mode == stopRetire && t.current().RunOnce && d.retain != nil {
		if err := d.retain.keep(id, dir); err != nil {
			d.logger.Warn("cannot keep a finished batch job's output", "assignment", id, "err", err)
		}
	}
	d.forget(id)
	if mode == stopRestart {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove task dir: %w", err)
	}
	return nil
}

// Running implements Driver.
func (d *ExecDriver) Running() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.tasks))
}

// StopAll implements Driver.
func (d *ExecDriver) StopAll(ctx context.Context) error {
	for _, id := range d.Running() {
		_ = d.Stop(ctx, id)
	}
	return nil
}

// supervise runs the task until halted, restarting it when it ends as
// restartPolicy says.
func (d *ExecDriver) supervise(t *execTask) {
	defer close(t.done)
	policy := newRestartPolicy(time.Now, d.stableAfter)
	for {
		err := d.runOnce(t, policy)
		select {
		case <-t.halted:
			t.set(api.JobStopped, "")
			return
		default:
		}
		if t.current().RunOnce {
			d.finishOnce(t, err)
			return
		}
		_, msg := d.exitMessage(t, err)
		t.set(api.JobFailed, msg)
		d.emit(t, api.JobFailed, msg)
		if !restartAfter(t.halted, policy.ended()) {
			t.set(api.JobStopped, "") // a stop cancels the pending restart
			return
		}
	}
}

// restartAfter waits delay and says whether to start the next run: not
// once halted closes, even when it does as the delay ends.
func restartAfter(halted <-chan struct{}, delay time.Duration) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-halted:
		return false
	case <-timer.C:
	}
	select {
	case <-halted:
		return false
	default:
		return true
	}
}

// finishOnce reports a batch job's exit and keeps the task, exited, until
// it is stopped: a batch job is never restarted by the driver (the server
// restarts it, by a new generation, under the bundle's restart policy).
func (d *ExecDriver) finishOnce(t *execTask, err error) {
	code, msg := d.exitMessage(t, err)
	t.mu.Lock()
	t.state, t.message, t.code = api.JobExited, msg, code
	t.mu.Unlock()
	select {
	case d.events <- TaskEvent{ID: t.current().ID, State: api.JobExited, Message: msg, ExitCode: code, Generation: t.current().Generation}:
	default: // the next reconcile reports the state anyway
	}
	<-t.halted
	t.set(api.JobStopped, "")
}

// exitMessage says how the task's process ended (runOnce's error): the
// command and its exit code, with its last lines of stderr when it
// failed, or why it could not start.
func (d *ExecDriver) exitMessage(t *execTask, err error) (code int, msg string) {
	a := t.current()
	t.mu.Lock()
	from := t.errFrom
	t.mu.Unlock()
	code = processExitCode(err)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return code, err.Error()
	}
	what := filepath.Base(legacyJob(a.Launch).Command[0])
	if code == 0 {
		return 0, what + " exited with code 0"
	}
	return code, failureMessage(what, code, tailFile(filepath.Join(taskDir(d.stateDir, a.ID), stderrLog), from, 10))
}

// startFailed is the exit code of a process that could not start (as a
// shell reports a command it cannot run).
const startFailed = 127

// processExitCode reads a finished process's exit code from Wait's error:
// 0, its code, 128+signal when a signal ended it, or startFailed.
func processExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return startFailed
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// ExitCode implements ExitCoder.
func (d *ExecDriver) ExitCode(id string) (int, bool) {
	d.mu.Lock()
	t := d.tasks[id]
	d.mu.Unlock()
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code, t.state == api.JobExited
}

// runOnce starts the process and waits for it to exit. It reads running
// when the policy says (at once, or once a run that follows a failure has
// stayed up), the task reading failed until then.
func (d *ExecDriver) runOnce(t *execTask, policy *restartPolicy) error {
	a := t.current()
	job := legacyJob(a.Launch)
	cmd := exec.Command(job.Command[0], job.Command[1:]...)
	cmd.Env = append(os.Environ(), taskEnv(a, d.statePath(a.ID))...)
	cmd.SysProcAttr = childAttr()
	stdout, stderr, err := openLogs(taskDir(d.stateDir, a.ID))
	if err != nil {
		d.logger.Warn("cannot keep the task's output", "assignment", a.ID, "err", err)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	} else {
		cmd.Stdout, cmd.Stderr = stdout, stderr
		defer stdout.Close()
		defer stderr.Close()
		if st, err := stderr.Stat(); err == nil {
			t.mu.Lock()
			t.errFrom = st.Size()
			t.mu.Unlock()
		}
	}
	if a.MemoryLimitMiB > 0 {
		if cg := d.limiter.enter(a.ID, a.MemoryLimitMiB); cg != nil {
			defer cg.release()
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.f.Fd())
		}
	}
	err = startPinned(cmd, a.Cores)
	if err != nil && cmd.SysProcAttr.UseCgroupFD && !missingProgram(err) {
		// The kernel refused the cgroup (too old for CLONE_INTO_CGROUP, or
		// not ours): run the job unlimited rather than not at all.
		d.limiter.notEnforced(fmt.Errorf("start in cgroup: %w", err))
		retry := exec.Command(cmd.Path, cmd.Args[1:]...) // a Cmd is not started twice
		retry.Env, retry.Stdout, retry.Stderr = cmd.Env, cmd.Stdout, cmd.Stderr
		retry.SysProcAttr = childAttr()
		cmd = retry
		err = startPinned(cmd, a.Cores)
	}
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if err := recordChild(d.stateDir, a.ID, cmd.Process.Pid); err != nil {
		d.logger.Warn("cannot record the child: if the worker dies, the rest of its process group may outlive it", "assignment", a.ID, "err", err)
	}
	t.attach(cmd.Process)
	policy.started()
	exited := make(chan struct{})
	marked := policy.markWhenStable(exited, func() { d.markRunning(t) })
	err = cmd.Wait()
	close(exited)
	marked() // the run's end is set after its start, never before
	return err
}

func (d *ExecDriver) markRunning(t *execTask) {
	t.set(api.JobRunning, "")
	d.emit(t, api.JobRunning, "")
}

// missingProgram reports a start that failed for want of the program,
// which running outside the cgroup would not change.
func missingProgram(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT)
}

func (d *ExecDriver) emit(t *execTask, state, msg string) {
	select {
	case d.events <- TaskEvent{ID: t.current().ID, State: state, Message: msg}:
	default: // the next reconcile reports the state anyway
	}
}

func (d *ExecDriver) statePath(id string) string {
	return filepath.Join(taskDir(d.stateDir, id), "state.json")
}

// writeState records role and epoch where the workload can re-read them.
func (d *ExecDriver) writeState(a api.Assignment) error {
	b, err := json.Marshal(map[string]any{"role": a.Role, "epoch": a.Epoch, "assignment": a.ID})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(taskDir(d.stateDir, a.ID), 0o750); err != nil {
		return err
	}
	tmp := d.statePath(a.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, d.statePath(a.ID))
}

// taskEnv is what a workload learns about itself.
func taskEnv(a api.Assignment, stateFile string) []string {
	env := []string{
		"AMSERVER_ASSIGNMENT=" + a.ID, "AMSERVER_BUNDLE=" + a.BundleID, "AMSERVER_JOB=" + a.Job,
		"AMSERVER_ROLE=" + a.Role, "AMSERVER_EPOCH=" + strconv.FormatUint(a.Epoch, 10),
		"AMSERVER_NODE=" + a.NodeID, "AMSERVER_STATE_FILE=" + stateFile,
		"AMSERVER_CAPACITY=" + strconv.FormatFloat(a.Capacity, 'f', -1, 64),
		"AMSERVER_CORES=" + joinInts(a.Cores),
	}
	if a.GPU != nil {
		env = append(env, "AMSERVER_GPU="+strconv.Itoa(a.GPU.Index), "AMSERVER_GPU_CAPACITY="+strconv.FormatFloat(a.GPU.Capacity, 'f', -1, 64))
	}
	if len(a.GPUs) > 0 {
		env = append(env, "AMSERVER_GPUS="+joinInts(a.GPUs))
	}
	jobEnv := legacyJob(a.Launch).Env
	for _, k := range slices.Sorted(maps.Keys(jobEnv)) {
		env = append(env, k+"="+jobEnv[k])
	}
	return env
}

func joinInts(list []int) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}
