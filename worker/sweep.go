package worker

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/amserver/amserver/api"
)

// A worker that stops its tasks removes their directories (Driver.Stop),
// but one that crashed, or whose shutdown ran out of time, leaves them
// behind: Recover adopts containers and kills exec children, and nothing
// holds the directories of exec and wasm tasks any more. A task still
// assigned here runs again in its old directory; the sweep removes the
// others, so that a node whose worker restarts now and then does not fill
// its disk with the logs of work long gone.

// sweeper is a driver that removes what no task holds from its task
// directories; the worker calls it after each reconcile, with the
// assignments it reconciled (all of this node's).
type sweeper interface {
	sweep(list []api.Assignment)
}

var _ sweeper = (*Dispatcher)(nil)

// sweep removes every task directory that belongs to no task a driver
// holds and to no assignment listed to run here. A batch job listed as
// stopped (its bundle ended while the worker was down) keeps its output in
// the retain store first, as its last stop would have. Directories are
// created only for held tasks, by Ensure, which runs on the caller's
// goroutine: none can appear between the listing and the removal.
func (d *Dispatcher) sweep(list []api.Assignment) {
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return // nothing was ever started here
	}
	held := map[string]bool{}
	for _, id := range d.Running() {
		held[taskName(id)] = true
	}
	listed := make(map[string]api.Assignment, len(list))
	for _, a := range list {
		listed[taskName(a.ID)] = a
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "am-") || held[name] {
			continue
		}
		a, ok := listed[name]
		if ok && a.Desired == api.DesiredRun {
			continue // Ensure starts it again there, or it is a batch job that ran to its end
		}
		dir := filepath.Join(d.root, name)
		if ok && a.RunOnce && d.retain != nil {
			if err := d.retain.keep(a.ID, dir); err != nil {
				d.logger.Warn("cannot keep a finished batch job's output", "assignment", a.ID, "err", err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			d.logger.Warn("cannot remove a task directory an earlier run left", "dir", dir, "err", err)
			continue
		}
		args := []any{"dir", dir}
		if ok {
			args = append(args, "assignment", a.ID)
		}
		d.logger.Info("removed a task directory an earlier run of the worker left", args...)
	}
}
