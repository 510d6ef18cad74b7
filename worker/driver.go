package worker

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/amserver/amserver/api"
)

// Driver runs assignments on a worker.
type Driver interface {
	// Ensure makes the task match the assignment's desired state and returns
	// the state to report (running, stopped, failed) and a message; an empty
	// state means nothing to report yet.
	Ensure(ctx context.Context, a api.Assignment) (state, message string)
	// Stop stops a task that is no longer assigned.
	Stop(id string) error
	// Running lists the ids of the tasks the driver holds.
	Running() []string
	// StopAll stops every task (worker shutdown).
	StopAll() error
	// Events reports changes the driver notices on its own (crashes,
	// restarts); nil when it never does.
	Events() <-chan TaskEvent
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

// Ensure implements Driver.
func (d *NoneDriver) Ensure(_ context.Context, a api.Assignment) (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Desired == "run" {
		d.tasks[a.ID] = true
		return api.JobRunning, ""
	}
	delete(d.tasks, a.ID)
	return api.JobStopped, ""
}

// Stop implements Driver.
func (d *NoneDriver) Stop(id string) error {
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
func (d *NoneDriver) StopAll() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.tasks)
	return nil
}

// Events implements Driver: nothing happens behind the worker's back.
func (d *NoneDriver) Events() <-chan TaskEvent { return nil }
