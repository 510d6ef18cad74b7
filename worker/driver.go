package worker

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/amserver/amserver/api"
)

// Driver runs assignments on a worker. Every runtime (compose, wasm,
// docker, exec, none) has one, and the Dispatcher picks among them by
// api.Assignment.Runtime. Nothing here may block on the workload for long:
// Ensure starts work and returns, and the driver reports what happens later
// through Events.
//
// A driver keeps each workload's stdout and stderr in files of the
// assignment's directory (stdout.log, stderr.log; see taskDir), so that
// the log endpoint serves every runtime the same way (logSource). A
// batch job's last stop moves them to the retainStore (retirer), which
// serves them for a while after the job is gone.
type Driver interface {
	// Recover adopts what an earlier run of this worker left running
	// (containers outlive a worker restart), so that it is not started
	// twice and so that what is no longer assigned here shows up in Running
	// and gets stopped; what a driver cannot adopt (an exec child) it
	// kills instead. The worker calls it once before its first reconcile;
	// an error is logged, not fatal.
	Recover(ctx context.Context) error
	// Ensure makes the task match the assignment's desired state and returns
	// the state to report (running, stopped, failed) and a message; an empty
	// state means nothing to report yet.
	Ensure(ctx context.Context, a api.Assignment) (state, message string)
	// Stop stops a task and removes its directory, and returns when it is
	// gone or ctx ends (the stop then goes on in the background). The
	// worker stops a task no longer assigned through retirer, and one it
	// restarts for a new generation through restarter, when the driver is
	// one, so that a batch job's output is kept and the logs go on.
	Stop(ctx context.Context, id string) error
	// Running lists the ids of the tasks the driver holds, adopted ones
	// included.
	Running() []string
	// StopAll stops every task (worker shutdown).
	StopAll(ctx context.Context) error
	// Events reports changes the driver notices on its own (crashes,
	// restarts, a deploy that finished); nil when it never does.
	Events() <-chan TaskEvent
}

// retirer is a driver that tells a task's last stop (the servers stopped
// its assignment or no longer list it here) from a stop before it runs
// again (a restart, a new generation, a new launch, another runtime): the
// last stop of a batch job (RunOnce) keeps its output in the retainStore,
// where the log endpoint still finds it. Ensure of an assignment desired
// stopped is a last stop too; Stop and StopAll are not.
type retirer interface {
	retire(ctx context.Context, id string) error
}

// restarter is a driver that can stop a task to run it again in place (a
// batch restart, an in-place launch change: a new generation) and keep its
// directory, so that the next run, whichever driver runs it, appends to
// the same stdout.log and stderr.log and a batch job's last stop keeps
// every attempt's output. A driver that is not one loses the task's
// output with Stop.
type restarter interface {
	stopToRestart(ctx context.Context, id string) error
}

// stopMode says what a driver's stop keeps of a task besides halting it.
type stopMode int

const (
	// stopRemove removes the task's directory (Stop, StopAll).
	stopRemove stopMode = iota
	// stopRetire is the task's last stop (retirer): a batch job's output
	// moves to the retainStore, then the directory goes.
	stopRetire
	// stopRestart keeps the directory for the run that follows (restarter).
	stopRestart
)

// merge is the mode of a stop under way that another stop joins: a last
// stop keeps a batch job's output whatever began the stop, and a plain
// stop removes the directory even when a restart began it.
func (m stopMode) merge(other stopMode) stopMode {
	switch {
	case m == stopRetire || other == stopRetire:
		return stopRetire
	case m == stopRemove || other == stopRemove:
		return stopRemove
	}
	return stopRestart
}

// stopWith stops a task the way mode says when the driver can (retirer,
// restarter), else with Stop.
func stopWith(ctx context.Context, drv Driver, id string, mode stopMode) error {
	if r, ok := drv.(retirer); ok && mode == stopRetire {
		return r.retire(ctx, id)
	}
	if r, ok := drv.(restarter); ok && mode == stopRestart {
		return r.stopToRestart(ctx, id)
	}
	return drv.Stop(ctx, id)
}

// retainer is a driver that keeps finished batch jobs' output (the
// Dispatcher); the worker sets its retention period and prunes it.
type retainer interface {
	retained() *retainStore
}

// TaskEvent is a state change the driver noticed on its own (a crash, a
// restart, a batch job's exit), for the worker to report. ExitCode goes
// with state exited, Generation is the assignment generation that ran.
type TaskEvent struct {
	ID, State, Message string
	ExitCode           int
	Generation         uint64
}

// ExitCoder is a driver that knows the exit code of a task it reports
// exited (a batch job, api.Assignment.RunOnce, that ran to its end).
type ExitCoder interface {
	ExitCode(id string) (code int, ok bool)
}

// unknownExit is reported for an exited task whose driver cannot say its
// code: not 0, so nothing unknown passes for a success.
const unknownExit = -1

// runtimeLister is a driver that knows which runtimes its node offers; the
// worker registers them when its inventory names none.
type runtimeLister interface {
	Runtimes() []string
}

// NoneDriver runs nothing: it reports running at once and stopped when
// asked (DESIGN §2.3, driver "none").
type NoneDriver struct {
	mu    sync.Mutex
	tasks map[string]bool
}

var _ Driver = (*NoneDriver)(nil)

// NewNoneDriver returns a driver that only tracks what it was told to run.
func NewNoneDriver() *NoneDriver { return &NoneDriver{tasks: map[string]bool{}} }

// Runtimes: a simulated node pretends to offer every runtime a worker can
// detect, so that any job can be placed on it in the dev cluster.
func (d *NoneDriver) Runtimes() []string {
	return []string{api.RuntimeExec, api.RuntimeWasm, api.RuntimeDocker, api.RuntimeCompose}
}

// Recover implements Driver: a simulated task does not outlive the worker.
func (d *NoneDriver) Recover(context.Context) error { return nil }

// Ensure implements Driver. A batch job (RunOnce) is simulated as one that
// runs to its end at once and exits 0.
func (d *NoneDriver) Ensure(_ context.Context, a api.Assignment) (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Desired == api.DesiredRun {
		d.tasks[a.ID] = true
		if a.RunOnce {
			return api.JobExited, "simulated: exited 0"
		}
		return api.JobRunning, ""
	}
	delete(d.tasks, a.ID)
	return api.JobStopped, ""
}

// Stop implements Driver.
func (d *NoneDriver) Stop(_ context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tasks, id)
	return nil
}

// Running implements Driver.
func (d *NoneDriver) Running() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.tasks))
}

// StopAll implements Driver.
func (d *NoneDriver) StopAll(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.tasks)
	return nil
}

// Events implements Driver: nothing happens behind the worker's back.
func (d *NoneDriver) Events() <-chan TaskEvent { return nil }

// ExitCode implements ExitCoder: a simulated batch job always succeeds.
func (d *NoneDriver) ExitCode(id string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return 0, d.tasks[id]
}
