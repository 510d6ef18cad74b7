package worker

import "github.com/amserver/amserver/api"

// logSource is a driver whose tasks keep their output in a directory's
// stdout.log and stderr.log (taskDir). The worker's log endpoint serves
// only what a driver says it holds, so a caller cannot read the files of
// an assignment this node does not run.
type logSource interface {
	// taskLog locates task id's output: dir is "" when the task keeps none
	// (driver none); live says the workload may still write (a follower
	// keeps reading); ok is false when the driver does not hold the task.
	taskLog(id string) (dir string, live, ok bool)
}

var (
	_ logSource = (*Dispatcher)(nil)
	_ logSource = (*ExecDriver)(nil)
	_ logSource = (*WasmDriver)(nil)
	_ logSource = (*containerDriver)(nil)
	_ logSource = (*NoneDriver)(nil)
)

// taskLog implements logSource: whichever driver holds the task answers,
// else the retain store, whose tasks write no more.
func (d *Dispatcher) taskLog(id string) (string, bool, bool) {
	for _, drv := range d.drivers {
		if src, ok := drv.(logSource); ok {
			if dir, live, held := src.taskLog(id); held {
				return dir, live, true
			}
		}
	}
	if d.retain != nil {
		if dir, ok := d.retain.lookup(id); ok {
			return dir, false, true
		}
	}
	return "", false, false
}

// taskLog implements logSource: a simulated task writes nothing.
func (d *NoneDriver) taskLog(id string) (string, bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return "", false, d.tasks[id]
}

// taskLog implements logSource: a held exec task is restarted whenever
// it exits, so it stays live until it is stopped, unless it is a batch
// job that exited: that one writes no more.
func (d *ExecDriver) taskLog(id string) (string, bool, bool) {
	d.mu.Lock()
	t := d.tasks[id]
	d.mu.Unlock()
	if t == nil {
		return "", false, false
	}
	t.mu.Lock()
	live := t.state != api.JobExited
	t.mu.Unlock()
	return taskDir(d.stateDir, id), live, true
}

// taskLog implements logSource: a service's module is run again when it
// ends, so it stays live until it is stopped; a batch module that exited
// stays held (exited) until then, and writes no more.
func (d *WasmDriver) taskLog(id string) (string, bool, bool) {
	d.mu.Lock()
	t := d.tasks[id]
	d.mu.Unlock()
	if t == nil {
		return "", false, false
	}
	live := true
	select {
	case <-t.done:
		live = false
	default:
	}
	return taskDir(d.root, id), live, true
}

// taskLog implements logSource: the output files are copied from the
// containers while the task runs or is being deployed.
func (d *containerDriver) taskLog(id string) (string, bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[id]
	if t == nil {
		return "", false, false
	}
	return t.dir, !t.stopping, true
}
