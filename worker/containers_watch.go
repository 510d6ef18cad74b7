package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/amserver/amserver/api"
)

// watch scans the driver's containers every interval (or when a deploy
// finished), and rarely while it holds nothing (to adopt what a failed
// stop left behind).
func (d *containerDriver) watch() {
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		case <-d.kick:
		}
		if len(d.Running()) == 0 {
			if idle++; idle%30 != 1 {
				continue
			}
		} else {
			idle = 0
		}
		ctx, cancel := context.WithTimeout(d.ctx, time.Minute)
		if err := d.scan(ctx); err != nil && d.ctx.Err() == nil {
			d.logger.Debug("container scan failed", "err", err)
		}
		cancel()
	}
}

// verdict is what a scan makes of one task's containers.
type verdict struct {
	t     *ctask
	state string
	row   *psRow // the container that failed
	code  int
	msg   string
	limit int64 // the job's memoryLimitMiB
	// restartable: row ended and is a service's to restart, unless own
	// says it has a restart policy of its own (restartStep).
	restartable, own bool
}

// exitSIGKILL is the code of a container the kernel's OOM killer ended.
const exitSIGKILL = 128 + 9

// oomNote says that a container was killed for its memory, and what limit
// the job set, so that "exited with code 137" does not leave the operator
// guessing between an OOM kill and a docker kill.
func oomNote(oom bool, limitMiB int64) string {
	switch {
	case !oom:
		return ""
	case limitMiB > 0:
		return fmt.Sprintf(" (killed out of memory: the job's memoryLimitMiB is %d, each container's limit)", limitMiB)
	}
	return " (killed out of memory: the job sets no memoryLimitMiB; the node ran out)"
}

// scan lists this node's containers of this runtime, adopts those of
// unknown assignments, and updates each task's state from its containers.
func (d *containerDriver) scan(ctx context.Context) error {
	started := time.Now()
	rows, err := d.cli.ps(ctx, "label="+labelNode+"="+d.nodeID, "label="+labelRuntime+"="+d.runtime)
	if err != nil {
		return err
	}
	byTask := map[string][]psRow{}
	for _, r := range rows {
		if r.Assignment != "" {
			byTask[r.Assignment] = append(byTask[r.Assignment], r)
		}
	}
	d.mu.Lock()
	d.adopt(byTask, started)
	var verdicts []verdict
	for id, t := range d.tasks {
		if t.deploying || t.stopping || t.spec == "" || t.deployedAt.After(started) {
			continue // this listing may predate what the deploy did
		}
		v := judge(t, byTask[id], d.cleanExitEnds())
		v.limit = t.a.MemoryLimitMiB // read under d.mu, for the message
		if ids := d.restartStep(t, &v, byTask[id], started); len(ids) > 0 {
			d.startRestart(t, ids)
			continue
		}
		if v.state == api.JobFailed && v.row != nil && t.state == api.JobFailed && t.failedID == v.row.ID && !v.restartable {
			continue // already reported, message and all
		}
		verdicts = append(verdicts, v)
		d.followLogs(t, byTask[id])
	}
	d.retryDue()
	d.mu.Unlock()
	for i := range verdicts {
		if v := &verdicts[i]; v.row != nil {
			what := d.backend.describe(*v.row) + oomNote(v.code == exitSIGKILL && d.cli.oomKilled(ctx, v.row.ID), v.limit)
			v.msg = failureMessage(what, v.code, d.cli.logsTail(ctx, v.row.ID, 10))
			if v.restartable {
				v.own = d.cli.ownRestartPolicy(ctx, v.row.ID)
			}
		}
	}
	d.record(verdicts)
	return nil
}

// record sets the states of a scan's verdicts, and schedules the restarts
// they call for, unless their task moved on (deployed, stopped) meanwhile.
func (d *containerDriver) record(verdicts []verdict) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range verdicts {
		if d.tasks[v.t.id] == v.t && !v.t.deploying && !v.t.stopping && v.state != "" {
			failedID := ""
			if v.row != nil {
				failedID = v.row.ID
			}
			if v.state == api.JobExited {
				v.t.code = v.code
			}
			d.setState(v.t, v.state, v.msg, failedID)
			switch {
			case v.restartable && v.own:
				v.t.leftToDocker = failedID
			case v.restartable:
				d.scheduleRestart(v.t, time.Now())
			}
		}
	}
}

// adopt takes over the containers of assignments the driver does not hold:
// left by an earlier run of this worker. They show up in Running, so the
// worker stops those no longer assigned here; Ensure finds the others and
// redeploys only if their spec label differs. d.mu is held.
func (d *containerDriver) adopt(byTask map[string][]psRow, listed time.Time) {
	for id, when := range d.gone {
		if time.Since(when) > 2*time.Minute {
			delete(d.gone, id)
		}
	}
	for id, rows := range byTask {
		if d.tasks[id] != nil {
			continue
		}
		if when, ok := d.gone[id]; ok && !listed.After(when) {
			continue // listed before its stop finished
		}
		t := &ctask{id: id, name: taskName(id), dir: taskDir(d.root, id), spec: rows[0].Spec, want: rows[0].Spec,
			a: api.Assignment{ID: id, BundleID: rows[0].Bundle, Job: rows[0].Job, NodeID: d.nodeID}}
		if t.spec == "" {
			t.spec = "adopted" // no label: any Ensure redeploys it
		}
		d.tasks[id] = t
		d.logger.Info("adopted containers of an earlier run", "assignment", id, "containers", len(rows))
	}
}

// judge reads a task's state from its containers: failed when one exited
// non-zero (or at all, with cleanExitEnds) or keeps restarting, or when
// they are all gone; stopped when all exited 0; running when one runs;
// nothing to say while they are being created.
func judge(t *ctask, rows []psRow, cleanExitEnds bool) verdict {
	if len(rows) == 0 {
		return verdict{t: t, state: api.JobFailed, msg: "the containers are gone (removed outside amserver)"}
	}
	if t.a.RunOnce {
		return judgeOnce(t, rows)
	}
	running, exited0 := 0, 0
	for i, r := range rows {
		switch r.State {
		case "exited", "dead", "restarting":
			code := exitCode(r.Status)
			if code == 0 && r.State == "exited" && !cleanExitEnds {
				exited0++
				continue
			}
			return verdict{t: t, state: api.JobFailed, row: &rows[i], code: code}
		case "running", "paused", "removing":
			running++
		}
	}
	switch {
	case running > 0:
		return verdict{t: t, state: api.JobRunning}
	case exited0 == len(rows):
		return verdict{t: t, state: api.JobStopped, msg: fmt.Sprintf("%d container(s) exited with code 0", exited0)}
	}
	return verdict{t: t}
}

// judgeOnce reads a batch job's containers: running while any runs (or is
// being created), exited once all have, with the first non-zero exit code
// of its containers (a compose stack's services, in listing order), else 0.
func judgeOnce(t *ctask, rows []psRow) verdict {
	code := 0
	for _, r := range rows {
		if r.State != "exited" && r.State != "dead" {
			if r.State == "running" || r.State == "paused" || r.State == "restarting" {
				return verdict{t: t, state: api.JobRunning}
			}
			return verdict{t: t}
		}
		if c := exitCode(r.Status); code == 0 && c != 0 {
			code = c
		}
	}
	return verdict{t: t, state: api.JobExited, code: code,
		msg: fmt.Sprintf("%d container(s) exited, code %d", len(rows), code)}
}

// retryDue restarts failed deploys whose backoff is over, of the latest
// assignment Ensure was given; d.mu is held.
func (d *containerDriver) retryDue() {
	now := time.Now()
	for _, t := range d.tasks {
		if !t.assigned || t.want == "" {
			continue
		}
		if spec := specHash(d.runtime, t.a); t.needsDeploy(spec, now) {
			d.startDeploy(t, spec)
		}
	}
}
