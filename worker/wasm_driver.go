package worker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// DefaultWasmMemoryMiB bounds a module's linear memory when its job sets
// no limit of its own (requirements.memoryLimitMiB).
const DefaultWasmMemoryMiB = 256

// WasmDriver runs a wasm template's main.wasm in-process with wazero (WASI
// preview 1): the launch's variables as its environment, no arguments
// (argv[0] only),
// the template's files read-only at "/", stdout and stderr into the
// assignment's log files, memory bounded, and stopped by cancelling its
// context. Compiled code is cached on disk, shared by every module: a Go
// wasip1 module is megabytes and takes seconds to compile.
type WasmDriver struct {
	root      string
	templates *templateCache
	cache     wazero.CompilationCache
	memoryMiB int
	logger    *slog.Logger
	events    chan TaskEvent
	retain    *retainStore // nil: a batch module's output goes with its task
	// stableAfter is how long a run that follows an end must stay up
	// before the task reads running again (restartPolicy).
	stableAfter time.Duration

	mu    sync.Mutex
	tasks map[string]*wasmTask
}

type wasmTask struct {
	spec       string
	cancel     context.CancelFunc
	done       chan struct{}
	state, msg string
	code       int    // a batch module's exit code, once it exited
	gen        uint64 // the assignment generation it runs
	runOnce    bool   // a batch module: its last stop keeps its output
	// A deploy that failed for a reason that may pass (the servers out of
	// reach) is tried again after a backoff.
	failures  int
	retryable bool
	retryAt   time.Time
}

var _ Driver = (*WasmDriver)(nil)

func newWasmDriver(cfg RuntimeConfig, templates *templateCache, events chan TaskEvent) (*WasmDriver, error) {
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(cfg.DataDir, "wasm-cache"))
	if err != nil {
		return nil, fmt.Errorf("wasm compilation cache: %w", err)
	}
	mib := cfg.WasmMemoryMiB
	if mib <= 0 {
		mib = DefaultWasmMemoryMiB
	}
	return &WasmDriver{
		root: cfg.assignmentsDir(), templates: templates, cache: cache, memoryMiB: mib,
		logger: cfg.Logger.With("runtime", api.RuntimeWasm), events: events, stableAfter: defaultStableAfter,
		tasks: map[string]*wasmTask{},
	}, nil
}

// memoryPages is the module's memory limit in 64 KiB pages (16 per MiB):
// the job's memoryLimitMiB; without one, the driver's default or the
// job's reserved memoryMiB if that is more (what it reserved it may use);
// never above wasm32's 4 GiB address space (65,536 pages).
func (d *WasmDriver) memoryPages(a api.Assignment) uint32 {
	mib := max(int64(d.memoryMiB), a.MemoryMiB)
	if a.MemoryLimitMiB > 0 {
		mib = a.MemoryLimitMiB
	}
	return uint32(min(mib*16, 65536))
}

// Recover implements Driver: a module runs inside the worker and does not
// outlive it.
func (d *WasmDriver) Recover(context.Context) error { return nil }

// Events implements Driver.
func (d *WasmDriver) Events() <-chan TaskEvent { return d.events }

// Running implements Driver.
func (d *WasmDriver) Running() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.tasks))
}

// Ensure implements Driver. A service's module that ends is run again
// (supervise); a batch module's stays exited until it is stopped.
func (d *WasmDriver) Ensure(ctx context.Context, a api.Assignment) (string, string) {
	if a.Desired != api.DesiredRun {
		_ = d.stop(ctx, a.ID, stopRetire)
		return api.JobStopped, ""
	}
	spec := specHash(api.RuntimeWasm, a)
	d.mu.Lock()
	t := d.tasks[a.ID]
	d.mu.Unlock()
	failures := 0
	if t != nil && (t.spec != spec || d.retryDue(t)) {
		if t.spec == spec {
			failures = t.failures
		}
		_ = d.stop(ctx, a.ID, stopRestart) // a promotion, a new launch or a retry: run it again
		t = nil
	}
	if t == nil {
		t = d.start(a, spec, failures)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return t.state, t.msg
}

func (d *WasmDriver) retryDue(t *wasmTask) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return t.retryable && !time.Now().Before(t.retryAt)
}

func (d *WasmDriver) start(a api.Assignment, spec string, failures int) *wasmTask {
	ctx, cancel := context.WithCancel(context.Background())
	t := &wasmTask{spec: spec, cancel: cancel, done: make(chan struct{}), failures: failures, gen: a.Generation, runOnce: a.RunOnce}
	d.mu.Lock()
	d.tasks[a.ID] = t
	d.mu.Unlock()
	go func() {
		defer close(t.done)
		defer cancel()
		d.supervise(ctx, a, t)
	}()
	return t
}

// supervise runs the module until ctx ends. A service's module that ran and
// ended is run again as restartPolicy says; a batch module's end, a failed
// deploy (retried by Ensure, retryDue) or a module that cannot be compiled
// ends it.
func (d *WasmDriver) supervise(ctx context.Context, a api.Assignment, t *wasmTask) {
	policy := newRestartPolicy(time.Now, d.stableAfter)
	for {
		state, msg, ran := d.runSafely(ctx, a, t, policy)
		if ctx.Err() != nil {
			state, msg = api.JobStopped, "" // stopped on purpose
		}
		d.set(a.ID, t, state, msg)
		if !ran || a.RunOnce || ctx.Err() != nil {
			return
		}
		delay := time.NewTimer(policy.ended())
		select {
		case <-ctx.Done(): // a stop cancels the pending restart
			delay.Stop()
			d.set(a.ID, t, api.JobStopped, "")
			return
		case <-delay.C:
		}
	}
}

// runSafely turns a panic inside the runtime (a hostile module must not
// take the worker down) into a failure, not restarted.
func (d *WasmDriver) runSafely(ctx context.Context, a api.Assignment, t *wasmTask, policy *restartPolicy) (state, msg string, ran bool) {
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("wasm runtime panicked", "assignment", a.ID, "panic", r)
			state, msg, ran = api.JobFailed, fmt.Sprintf("the wasm runtime failed: %v", r), false
		}
	}()
	return d.run(ctx, a, t, policy)
}

// prepare fetches and unpacks the template and reads the module and its
// variables.
func (d *WasmDriver) prepare(ctx context.Context, a api.Assignment, dir string) ([]byte, []envVar, error) {
	archive, digest, err := d.templates.get(ctx, a.Launch.Ref)
	if err != nil {
		return nil, nil, err
	}
	if _, err := materialize(archive, digest, dir, artifact.RuntimeWasm); err != nil {
		return nil, nil, err
	}
	module, err := os.ReadFile(filepath.Join(dir, stackDir, "main.wasm"))
	if err != nil {
		return nil, nil, permanent(err)
	}
	params, ident, warnings, err := templateEnv(a)
	if err != nil {
		return nil, nil, permanent(err)
	}
	for _, w := range warnings {
		d.logger.Warn("launch variable not passed", "assignment", a.ID, "warning", w)
	}
	return module, append(params, ident...), nil
}

// run prepares and runs the module until it exits or ctx ends; ran says
// that the module started (its end is one to restart).
func (d *WasmDriver) run(ctx context.Context, a api.Assignment, t *wasmTask, policy *restartPolicy) (state, msg string, ran bool) {
	dir := taskDir(d.root, a.ID)
	stack := filepath.Join(dir, stackDir)
	module, env, err := d.prepare(ctx, a, dir)
	if err != nil {
		retry := !isPermanent(err)
		d.mu.Lock()
		t.retryable = retry
		t.failures++
		t.retryAt = time.Now().Add(min(time.Second<<min(t.failures, 6), time.Minute))
		d.mu.Unlock()
		d.logger.Warn("deploy failed", "assignment", a.ID, "retry", retry, "err", err)
		return api.JobFailed, lastLines([]byte("deploy failed: "+err.Error()), 20), false
	}
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).
		WithMemoryLimitPages(d.memoryPages(a)).WithCompilationCache(d.cache)
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	defer func() { _ = r.Close(context.Background()) }()
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	compiled, err := r.CompileModule(ctx, module)
	if err != nil {
		return api.JobFailed, "compile main.wasm: " + err.Error(), false
	}
	stdout, stderr, err := openLogs(dir)
	if err != nil {
		return api.JobFailed, err.Error(), false
	}
	defer stdout.Close()
	defer stderr.Close()
	var errFrom int64 // this run's stderr starts here: a failure quotes its own lines
	if st, err := stderr.Stat(); err == nil {
		errFrom = st.Size()
	}
	// argv is the program's name alone: Go's flag package, for one, needs
	// an argv[0].
	mc := wazero.NewModuleConfig().WithArgs("main.wasm").WithStdout(stdout).WithStderr(stderr).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader).
		WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(stack, "/"))
	for _, v := range env {
		mc = mc.WithEnv(v.Name, v.Value)
	}
	err = d.instantiate(ctx, r, compiled, mc, a.ID, t, policy)
	state, msg = d.endState(ctx, a.RunOnce, t, err, filepath.Join(dir, stderrLog), errFrom)
	return state, msg, true
}

// instantiate runs the module once, reading running when the policy says
// (at once, or once a run after an end has stayed up), until it ends.
func (d *WasmDriver) instantiate(ctx context.Context, r wazero.Runtime, compiled wazero.CompiledModule,
	mc wazero.ModuleConfig, id string, t *wasmTask, policy *restartPolicy) error {
	policy.started()
	exited := make(chan struct{})
	marked := policy.markWhenStable(exited, func() { d.set(id, t, api.JobRunning, "") })
	// Deferred, so that a panic ends the watch too: the run's end is set
	// after its start, never before, and a dead run never reads running.
	defer marked()
	defer close(exited)
	_, err := r.InstantiateModule(ctx, compiled, mc)
	return err
}

// endState reads how a run ended: a batch module that ran to its end
// exited with its proc_exit code, anything else as exitState says.
func (d *WasmDriver) endState(ctx context.Context, runOnce bool, t *wasmTask, err error, stderrPath string, errFrom int64) (string, string) {
	code, ok := moduleExitCode(err)
	if !ok || !runOnce || ctx.Err() != nil {
		return d.exitState(err, stderrPath, errFrom)
	}
	d.mu.Lock()
	t.code = code
	d.mu.Unlock()
	if code != 0 {
		return api.JobExited, failureMessage("main.wasm", code, tailFile(stderrPath, errFrom, 10))
	}
	return api.JobExited, "main.wasm exited with code 0"
}

// moduleExitCode reads how a module ended: returning from main is 0, a
// proc_exit its code; false when it did not exit (a trap, a failure).
func moduleExitCode(err error) (int, bool) {
	if err == nil {
		return 0, true
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return int(int32(exit.ExitCode())), true
	}
	return 0, false
}

// ExitCode implements ExitCoder.
func (d *WasmDriver) ExitCode(id string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[id]
	if t == nil || t.state != api.JobExited {
		return 0, false
	}
	return t.code, true
}

// exitState reads how a service's module ended: failed, since it is to
// run (as the exec driver says of a process), with the last lines of its
// stderr when its code was not 0.
func (d *WasmDriver) exitState(err error, stderrPath string, errFrom int64) (string, string) {
	if err == nil {
		return api.JobFailed, "main.wasm exited with code 0"
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() == 0 {
			return api.JobFailed, "main.wasm exited with code 0"
		}
		return api.JobFailed, failureMessage("main.wasm", int(int32(exit.ExitCode())), tailFile(stderrPath, errFrom, 10))
	}
	return api.JobFailed, lastLines([]byte("main.wasm failed: "+err.Error()+"\n"+tailFile(stderrPath, errFrom, 10)), 12)
}

// set records a task's state and reports a change, unless the task was
// replaced or removed meanwhile.
func (d *WasmDriver) set(id string, t *wasmTask, state, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t.state == state && t.msg == msg {
		return
	}
	t.state, t.msg = state, msg
	if d.tasks[id] != t {
		return
	}
	select {
	case d.events <- TaskEvent{ID: id, State: state, Message: msg, ExitCode: t.code, Generation: t.gen}:
	default:
	}
}

// Stop implements Driver: the module's context is cancelled, which closes
// it (WithCloseOnContextDone), and its directory removed.
func (d *WasmDriver) Stop(ctx context.Context, id string) error { return d.stop(ctx, id, stopRemove) }

// retire implements retirer.
func (d *WasmDriver) retire(ctx context.Context, id string) error { return d.stop(ctx, id, stopRetire) }

// stopToRestart implements restarter.
func (d *WasmDriver) stopToRestart(ctx context.Context, id string) error {
	return d.stop(ctx, id, stopRestart)
}

// stop stops the module and, unless it is to run again (stopRestart),
// removes its directory; a batch module's last stop (stopRetire) first
// moves its output to the retain store, once the module closed its files.
func (d *WasmDriver) stop(ctx context.Context, id string, mode stopMode) error {
	d.mu.Lock()
	t := d.tasks[id]
	delete(d.tasks, id)
	d.mu.Unlock()
	if t == nil {
		return nil
	}
	t.cancel()
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if mode == stopRestart {
		return nil
	}
	dir := taskDir(d.root, id)
	if mode == stopRetire && t.runOnce && d.retain != nil {
		if err := d.retain.keep(id, dir); err != nil {
			d.logger.Warn("cannot keep a finished batch job's output", "assignment", id, "err", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove task dir: %w", err)
	}
	return nil
}

// StopAll implements Driver.
func (d *WasmDriver) StopAll(ctx context.Context) error {
	var errs []error
	for _, id := range d.Running() {
		errs = append(errs, d.Stop(ctx, id))
	}
	return errors.Join(errs...)
}
