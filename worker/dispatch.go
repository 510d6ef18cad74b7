package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
)

// RuntimeConfig configures the real drivers of one worker.
type RuntimeConfig struct {
	NodeID string
	// DataDir holds assignments/ (one directory per assignment: its
	// output, its unpacked template), retained/ (finished batch jobs'
	// output, retainStore), templates/ (archives by digest) and
	// wasm-cache/ (compiled modules).
	DataDir string
	// Runtimes to enable; empty: DetectRuntimes. exec, wasm and none are
	// always enabled.
	Runtimes []string
	Logger   *slog.Logger
	// Templates serves template archives; nil: the worker that uses the
	// dispatcher serves them through the API.
	Templates TemplateSource
	// WatchInterval is how often container state is read (default 2 s).
	WatchInterval time.Duration
	// WasmMemoryMiB bounds a module's memory (default DefaultWasmMemoryMiB).
	WasmMemoryMiB int
}

func (c RuntimeConfig) assignmentsDir() string { return filepath.Join(c.DataDir, "assignments") }

// Dispatcher is the Driver of a worker that runs real workloads: it hands
// each assignment to the driver of its runtime (api.Assignment.Runtime:
// compose, wasm, docker, exec or none).
type Dispatcher struct {
	drivers   map[string]Driver
	runtimes  []string
	templates *templateCache
	events    chan TaskEvent
	logger    *slog.Logger
	retain    *retainStore // finished batch jobs' output
	root      string       // the task directories (RuntimeConfig.assignmentsDir)

	mu    sync.Mutex
	owner map[string]string // assignment → runtime of the driver that has it
}

var _ Driver = (*Dispatcher)(nil)

// NewDispatcher builds the drivers of every runtime this node offers.
func NewDispatcher(ctx context.Context, cfg RuntimeConfig) (*Dispatcher, error) {
	if cfg.NodeID == "" || cfg.DataDir == "" {
		return nil, errors.New("dispatcher: node id and data dir are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = 2 * time.Second
	}
	if len(cfg.Runtimes) == 0 {
		cfg.Runtimes = DetectRuntimes(ctx)
	}
	d := &Dispatcher{
		drivers: map[string]Driver{}, events: make(chan TaskEvent, 256), logger: cfg.Logger,
		templates: newTemplateCache(filepath.Join(cfg.DataDir, "templates"), cfg.Templates),
		owner:     map[string]string{}, root: cfg.assignmentsDir(),
	}
	var err error
	if d.retain, err = openRetainStore(filepath.Join(cfg.DataDir, "retained"), cfg.Logger, time.Now); err != nil {
		return nil, err
	}
	exec, err := NewExecDriver(cfg.assignmentsDir(), cfg.Logger)
	if err != nil {
		return nil, err
	}
	exec.events, exec.retain = d.events, d.retain
	wasm, err := newWasmDriver(cfg, d.templates, d.events)
	if err != nil {
		return nil, err
	}
	wasm.retain = d.retain
	d.drivers[runtimeNone] = NewNoneDriver()
	d.drivers[api.RuntimeExec] = exec
	d.drivers[api.RuntimeWasm] = wasm
	if err := d.addContainerDrivers(ctx, cfg); err != nil {
		return nil, err
	}
	for rt := range d.drivers {
		if rt != runtimeNone {
			d.runtimes = append(d.runtimes, rt)
		}
	}
	slices.Sort(d.runtimes)
	return d, nil
}

// addContainerDrivers enables docker and compose when they are among the
// runtimes to offer.
func (d *Dispatcher) addContainerDrivers(ctx context.Context, cfg RuntimeConfig) error {
	wantDocker := slices.Contains(cfg.Runtimes, api.RuntimeDocker)
	wantCompose := slices.Contains(cfg.Runtimes, api.RuntimeCompose)
	if !wantDocker && !wantCompose {
		return nil
	}
	cli, err := newDockerCLI()
	if err != nil {
		return err
	}
	if wantDocker {
		d.drivers[api.RuntimeDocker] = newContainerDriver(api.RuntimeDocker, cfg, cli, &dockerBackend{cli: cli}, d.events, d.retain)
	}
	if wantCompose {
		cc, ok := composeCommand(ctx)
		if !ok {
			return errors.New("compose runtime: neither `docker compose` nor `docker-compose` works")
		}
		b := &composeBackend{cli: cli, compose: cc, templates: d.templates, logger: cfg.Logger}
		d.drivers[api.RuntimeCompose] = newContainerDriver(api.RuntimeCompose, cfg, cli, b, d.events, d.retain)
	}
	return nil
}

// Runtimes lists what this node offers, for its inventory.
func (d *Dispatcher) Runtimes() []string { return slices.Clone(d.runtimes) }

// useTemplates makes src serve template archives unless one was set.
func (d *Dispatcher) useTemplates(src TemplateSource) {
	d.templates.mu.Lock()
	defer d.templates.mu.Unlock()
	if d.templates.src == nil {
		d.templates.src = src
	}
}

// Recover implements Driver.
func (d *Dispatcher) Recover(ctx context.Context) error {
	var errs []error
	for _, rt := range slices.Sorted(maps.Keys(d.drivers)) {
		if err := d.drivers[rt].Recover(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rt, err))
		}
	}
	return errors.Join(errs...)
}

// Ensure implements Driver.
func (d *Dispatcher) Ensure(ctx context.Context, a api.Assignment) (string, string) {
	rt := runtimeOf(a)
	drv := d.drivers[rt]
	d.mu.Lock()
	prev := d.owner[a.ID]
	d.mu.Unlock()
	if prev != "" && prev != rt {
		// The launch moved to another runtime: the old workload goes
		// first, its directory stays for the new driver's run (every
		// driver keeps it under d.root: the logs go on), unless this is
		// its last stop.
		mode := stopRestart
		if a.Desired != api.DesiredRun {
			mode = stopRetire
		}
		_ = stopWith(ctx, d.drivers[prev], a.ID, mode)
		d.setOwner(a.ID, "")
	}
	if drv == nil {
		if a.Desired != api.DesiredRun {
			return api.JobStopped, ""
		}
		if rt == "" {
			return api.JobFailed, "the assignment names no runtime and its launch implies none"
		}
		return api.JobFailed, fmt.Sprintf("runtime %q is not available on this node (it offers %s)", rt, strings.Join(d.runtimes, ", "))
	}
	d.setOwner(a.ID, rt)
	state, msg := drv.Ensure(ctx, a)
	if a.Desired != api.DesiredRun && state == api.JobStopped {
		d.setOwner(a.ID, "")
	}
	return state, msg
}

func (d *Dispatcher) setOwner(id, rt string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rt == "" {
		delete(d.owner, id)
	} else {
		d.owner[id] = rt
	}
}

// Stop implements Driver: whichever driver holds the task stops it
// (adopted tasks have no recorded owner).
func (d *Dispatcher) Stop(ctx context.Context, id string) error { return d.stop(ctx, id, stopRemove) }

// retire implements retirer: the task's last stop, which keeps a finished
// batch job's output.
func (d *Dispatcher) retire(ctx context.Context, id string) error {
	return d.stop(ctx, id, stopRetire)
}

// stopToRestart implements restarter: the task's directory stays for its
// next run, whichever driver runs it.
func (d *Dispatcher) stopToRestart(ctx context.Context, id string) error {
	return d.stop(ctx, id, stopRestart)
}

func (d *Dispatcher) stop(ctx context.Context, id string, mode stopMode) error {
	var errs []error
	for _, drv := range d.drivers {
		if slices.Contains(drv.Running(), id) {
			errs = append(errs, stopWith(ctx, drv, id, mode))
		}
	}
	d.setOwner(id, "")
	return errors.Join(errs...)
}

// retained implements retainer.
func (d *Dispatcher) retained() *retainStore { return d.retain }

// Running implements Driver.
func (d *Dispatcher) Running() []string {
	var ids []string
	for _, drv := range d.drivers {
		ids = append(ids, drv.Running()...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// StopAll implements Driver: every driver stops its tasks at once.
func (d *Dispatcher) StopAll(ctx context.Context) error {
	errs := make(chan error, len(d.drivers))
	for _, drv := range d.drivers {
		go func() { errs <- drv.StopAll(ctx) }()
	}
	var all []error
	for range d.drivers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// ExitCode implements ExitCoder: the driver that holds the task says.
func (d *Dispatcher) ExitCode(id string) (int, bool) {
	for _, drv := range d.drivers {
		if xc, ok := drv.(ExitCoder); ok && slices.Contains(drv.Running(), id) {
			if code, ok := xc.ExitCode(id); ok {
				return code, true
			}
		}
	}
	return 0, false
}

// Events implements Driver: every driver reports into one channel.
func (d *Dispatcher) Events() <-chan TaskEvent { return d.events }
