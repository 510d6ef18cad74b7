package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
)

// containerBackend is what the compose and docker drivers do differently;
// containerDriver does the rest: tasks, deploys and stops off the worker's
// loop, watching container state, adopting after a restart, and copying
// output into the assignment's log files.
type containerBackend interface {
	// deploy creates or updates the task's containers to run a, labelled
	// with spec. name is the task's project or container name, dir its
	// directory.
	deploy(ctx context.Context, a api.Assignment, spec, name, dir string) error
	// teardown removes the task's containers and networks, and its
	// volumes unless keepVolumes: a restart for a new generation runs the
	// same workload again, and a stack's named volumes are its data.
	teardown(ctx context.Context, name, dir string, keepVolumes bool) error
	// describe names a container in messages; logPrefix starts each of its
	// output lines in the shared log files.
	describe(r psRow) string
	logPrefix(r psRow) string
}

// ctask is one assignment run as containers.
type ctask struct {
	id, name, dir string
	a             api.Assignment
	assigned      bool   // Ensure has been called: its states are reported
	spec          string // what runs ("" before a first deploy)
	want          string // what the last deploy attempted
	state, msg    string
	code          int    // a batch job's exit code, once it exited
	failedID      string // the container the failure message is about

	// A service's restarts (containers_restart.go): the policy, nil until
	// first needed and after a deploy; when the ended containers start
	// again (zero: no restart pending); a failed container whose restart
	// is Docker's.
	policy       *restartPolicy
	restartAt    time.Time
	leftToDocker string

	deploying    bool
	deployedAt   time.Time
	cancelDeploy context.CancelFunc
	deployDone   chan struct{}
	failures     int
	retryAt      time.Time
	permanent    bool

	stopping bool
	mode     stopMode      // what the stop keeps: the directory, a batch job's output
	stopped  chan struct{} // closed when a stop finished; stopErr says how
	stopErr  error

	logs *taskLogs
}

// containerDriver runs assignments as containers through a backend.
type containerDriver struct {
	runtime string
	nodeID  string
	root    string
	cli     *dockerCLI
	backend containerBackend
	logger  *slog.Logger
	events  chan TaskEvent
	retain  *retainStore // nil: a batch job's output goes with its task
	every   time.Duration
	// stableAfter is how long a restarted run must stay up before the
	// task reads running again (restartPolicy).
	stableAfter time.Duration
	kick        chan struct{}
	ctx         context.Context // the driver's life: the watcher and deploys
	cancel      context.CancelFunc

	mu    sync.Mutex
	tasks map[string]*ctask
	gone  map[string]time.Time // recently stopped: not re-adopted from a stale listing
}

func newContainerDriver(runtime string, cfg RuntimeConfig, cli *dockerCLI, b containerBackend, events chan TaskEvent, retain *retainStore) *containerDriver {
	ctx, cancel := context.WithCancel(context.Background())
	d := &containerDriver{
		runtime: runtime, nodeID: cfg.NodeID, root: cfg.assignmentsDir(), cli: cli, backend: b,
		logger: cfg.Logger.With("runtime", runtime), events: events, retain: retain, every: cfg.WatchInterval,
		stableAfter: defaultStableAfter, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
		tasks: map[string]*ctask{}, gone: map[string]time.Time{},
	}
	go d.watch()
	return d
}

// specHash names what a deploy of a runs: anything that changes it (a new
// launch, a promotion, a new epoch, another memory limit) makes the driver
// deploy again. The limit joins only when set, so the hashes of what ran
// before limits existed stay as they were (a worker upgrade restarts
// nothing).
func specHash(runtime string, a api.Assignment) string {
	parts := []any{runtime, a.Launch, a.Role, a.Epoch, a.BundleID, a.ServiceID, a.Job, a.NodeID}
	if a.MemoryLimitMiB > 0 {
		parts = append(parts, a.MemoryLimitMiB)
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Recover implements Driver: one scan adopts the containers labelled with
// this node, so that Ensure finds them instead of starting them again.
func (d *containerDriver) Recover(ctx context.Context) error { return d.scan(ctx) }

// Events implements Driver.
func (d *containerDriver) Events() <-chan TaskEvent { return d.events }

// Running implements Driver.
func (d *containerDriver) Running() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.tasks))
}

// Ensure implements Driver. Deploys and stops run in the background; their
// outcome comes through Events and later calls.
func (d *containerDriver) Ensure(_ context.Context, a api.Assignment) (string, string) {
	if a.Desired != api.DesiredRun {
		if d.beginStop(a.ID, stopRetire) == nil {
			return api.JobStopped, ""
		}
		return "", ""
	}
	spec := specHash(d.runtime, a)
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[a.ID]
	if t != nil && t.stopping {
		return "", "" // runs again once the stop is done
	}
	if t == nil {
		t = &ctask{id: a.ID, name: taskName(a.ID), dir: taskDir(d.root, a.ID)}
		d.tasks[a.ID] = t
	}
	t.a, t.assigned = a, true
	if t.needsDeploy(spec, time.Now()) {
		d.startDeploy(t, spec)
	}
	return t.state, t.msg
}

// needsDeploy: the spec differs from what runs, and it was not attempted
// yet, or its last attempt failed for a reason that may pass and the
// backoff is over.
func (t *ctask) needsDeploy(spec string, now time.Time) bool {
	if t.deploying || t.stopping || t.spec == spec {
		return false
	}
	return t.want != spec || (!t.permanent && !now.Before(t.retryAt))
}

// startDeploy runs the backend's deploy in the background; d.mu is held.
func (d *containerDriver) startDeploy(t *ctask, spec string) {
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Minute)
	done := make(chan struct{})
	t.deploying, t.want, t.cancelDeploy, t.deployDone = true, spec, cancel, done
	a := t.a
	go func() {
		defer close(done)
		defer cancel()
		d.finishDeploy(t, spec, d.deploySafely(ctx, a, spec, t))
	}()
}

// deploySafely turns a panic while deploying (say, in parsing a hostile
// template) into a failed deploy instead of a dead worker.
func (d *containerDriver) deploySafely(ctx context.Context, a api.Assignment, spec string, t *ctask) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("deploy panicked", "assignment", a.ID, "panic", r)
			err = permanent(fmt.Errorf("deploy panicked: %v", r))
		}
	}()
	return d.backend.deploy(ctx, a, spec, t.name, t.dir)
}

func (d *containerDriver) finishDeploy(t *ctask, spec string, err error) {
	d.mu.Lock()
	t.deploying, t.cancelDeploy, t.deployedAt = false, nil, time.Now()
	if t.stopping {
		d.mu.Unlock()
		return
	}
	if err != nil {
		t.failures++
		t.permanent = isPermanent(err)
		t.retryAt = time.Now().Add(min(time.Second<<min(t.failures, 6), time.Minute))
		d.logger.Warn("deploy failed", "assignment", t.id, "permanent", t.permanent, "err", err)
		d.setState(t, api.JobFailed, lastLines([]byte("deploy failed: "+err.Error()), 20), "")
	} else {
		t.spec, t.failures, t.permanent = spec, 0, false
		t.policy, t.restartAt = nil, time.Time{} // new containers: a first run
	}
	d.mu.Unlock()
	d.poke()
}

// setState records a state and reports a change; d.mu is held.
func (d *containerDriver) setState(t *ctask, state, msg, failedID string) {
	if t.state == state && t.msg == msg {
		return
	}
	t.state, t.msg, t.failedID = state, msg, failedID
	if !t.assigned {
		return // adopted and not (yet) listed: nobody to report to
	}
	select {
	case d.events <- TaskEvent{ID: t.id, State: state, Message: msg, ExitCode: t.code, Generation: t.a.Generation}:
	default: // the next reconcile reports the state anyway
	}
}

func (d *containerDriver) poke() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// beginStop starts tearing a task down (once) and returns it; nil when the
// driver holds no such task. A stop that joins one under way merges its
// mode into it.
func (d *containerDriver) beginStop(id string, mode stopMode) *ctask {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[id]
	if t == nil {
		return nil
	}
	if t.stopping {
		t.mode = t.mode.merge(mode)
		return t
	}
	t.stopping, t.stopped, t.mode = true, make(chan struct{}), mode
	if t.cancelDeploy != nil {
		t.cancelDeploy()
	}
	go d.teardown(t, t.deployDone, t.stopped)
	return t
}

// removeContainers tears the task's containers down, keeping its volumes
// for a restart; a stop that joined the restart meanwhile as the task's
// last (stopMode.merge) takes them too.
func (d *containerDriver) removeContainers(ctx context.Context, t *ctask) error {
	d.mu.Lock()
	restart := t.mode == stopRestart
	d.mu.Unlock()
	if err := d.backend.teardown(ctx, t.name, t.dir, restart); err != nil || !restart {
		return err
	}
	d.mu.Lock()
	restart = t.mode == stopRestart
	d.mu.Unlock()
	if restart {
		return nil
	}
	return d.backend.teardown(ctx, t.name, t.dir, false)
}

// teardown waits for a deploy it cancelled, removes the task's containers
// (and, unless it is to run again, its directory) and forgets it; a failed
// teardown keeps the task, to be stopped again by the next reconcile.
func (d *containerDriver) teardown(t *ctask, deployDone, stopped chan struct{}) {
	if deployDone != nil {
		<-deployDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := d.removeContainers(ctx, t)
	d.mu.Lock()
	logs := t.logs // a stopping task gets no new followers
	t.logs = nil
	d.mu.Unlock()
	if logs != nil {
		logs.close(logDrainGrace) // outside d.mu: an ending follower takes it
	}
	d.mu.Lock()
	keep := err == nil && t.mode == stopRetire && t.a.RunOnce && d.retain != nil
	remove := err == nil && t.mode != stopRestart
	d.mu.Unlock()
	if keep {
		if err := d.retain.keep(t.id, t.dir); err != nil {
			d.logger.Warn("cannot keep a finished batch job's output", "assignment", t.id, "err", err)
		}
	}
	if remove {
		// Before the task is forgotten: a new deploy of the same id must
		// not find its directory being removed.
		_ = os.RemoveAll(t.dir)
	}
	d.mu.Lock()
	t.stopErr, t.stopping = err, false
	if err != nil {
		d.logger.Warn("stop failed", "assignment", t.id, "err", err)
		d.setState(t, api.JobFailed, "stop failed: "+err.Error(), "")
	} else {
		delete(d.tasks, t.id)
		d.gone[t.id] = time.Now()
		d.setState(t, api.JobStopped, "", "")
	}
	d.mu.Unlock()
	close(stopped)
}

// ExitCode implements ExitCoder.
func (d *containerDriver) ExitCode(id string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[id]
	if t == nil || t.state != api.JobExited {
		return 0, false
	}
	return t.code, true
}

// Stop implements Driver.
func (d *containerDriver) Stop(ctx context.Context, id string) error {
	return d.stop(ctx, id, stopRemove)
}

// retire implements retirer.
func (d *containerDriver) retire(ctx context.Context, id string) error {
	return d.stop(ctx, id, stopRetire)
}

// stopToRestart implements restarter: the containers go, the directory
// and its logs stay for the next deploy.
func (d *containerDriver) stopToRestart(ctx context.Context, id string) error {
	return d.stop(ctx, id, stopRestart)
}

func (d *containerDriver) stop(ctx context.Context, id string, mode stopMode) error {
	t := d.beginStop(id, mode)
	if t == nil {
		return nil
	}
	d.mu.Lock()
	stopped := t.stopped
	d.mu.Unlock()
	select {
	case <-stopped:
		d.mu.Lock()
		defer d.mu.Unlock()
		return t.stopErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StopAll implements Driver: every task is torn down at once, then the
// watcher ends.
func (d *containerDriver) StopAll(ctx context.Context) error {
	ids := d.Running()
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() { errs <- d.Stop(ctx, id) }()
	}
	var first error
	for range ids {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	d.cancel()
	return first
}
