package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// A service's containers that end are started again (`docker start`, the
// same containers: nothing runs twice, and a restarted worker adopts them
// as before) as restartPolicy says, by the scan that finds them ended
// once their delay is over; the task reads failed until a restarted run
// has stayed up. Docker's own restart policy is not used: its delays (from
// 100 ms, reset by a run of 10 s) are not the exec driver's, and a stack's
// failed container would read running at its first instant up. A
// container with a restart policy of its own (a compose service's
// `restart:`) is left to Docker. A batch job (RunOnce) is never restarted
// by the driver, nor a task not yet assigned (adopted: it may be a batch
// job, or no longer wanted here).

// restarts is the task's restart policy; d.mu is held.
func (d *containerDriver) restarts(t *ctask) *restartPolicy {
	if t.policy == nil {
		t.policy = newRestartPolicy(time.Now, d.stableAfter)
	}
	return t.policy
}

// restartStep applies the policy to a scan's verdict on a service's task
// and returns the containers to start now; d.mu is held. A run that is up
// but not yet stable reads nothing new (the task stays failed).
func (d *containerDriver) restartStep(t *ctask, v *verdict, rows []psRow, now time.Time) []string {
	if !t.assigned || t.a.RunOnce {
		return nil
	}
	p := d.restarts(t)
	switch {
	case v.state == api.JobRunning:
		t.restartAt = time.Time{} // up again (Docker, or by hand): nothing to start
		p.seenRunning()
		if p.untilRunning() > 0 {
			v.state = ""
		}
	case !t.restartAt.IsZero() && !now.Before(t.restartAt):
		t.restartAt = time.Time{}
		return d.endedContainers(rows)
	case v.row != nil && v.row.State == "exited":
		v.restartable = t.restartAt.IsZero() && t.leftToDocker != v.row.ID
	}
	return nil
}

// endedContainers are the task's containers that ended and are to start
// again: those that exited non-zero, and for the docker runtime (one
// container, the workload itself) those that exited 0 too; in a compose
// stack a container that exited 0 is a one-shot (an init step) and stays
// as it is.
func (d *containerDriver) endedContainers(rows []psRow) []string {
	var ids []string
	for _, r := range rows {
		if r.State == "exited" && (exitCode(r.Status) != 0 || d.cleanExitEnds()) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// cleanExitEnds: a container that exits 0 ends the workload (docker), or
// is a one-shot of a stack (compose).
func (d *containerDriver) cleanExitEnds() bool { return d.runtime == api.RuntimeDocker }

// scheduleRestart sets when the task's ended containers start again, once
// per end; d.mu is held.
func (d *containerDriver) scheduleRestart(t *ctask, now time.Time) {
	if t.restartAt.IsZero() {
		t.restartAt = now.Add(d.restarts(t).ended())
	}
}

// startRestart starts the containers in the background the way a deploy
// runs: a stop cancels it and waits for it before removing the task, so
// that nothing is started after a stop; d.mu is held.
func (d *containerDriver) startRestart(t *ctask, ids []string) {
	ctx, cancel := context.WithTimeout(d.ctx, time.Minute)
	done := make(chan struct{})
	t.deploying, t.cancelDeploy, t.deployDone = true, cancel, done
	go func() {
		defer close(done)
		defer cancel()
		err := d.startContainers(ctx, ids)
		d.mu.Lock()
		defer d.mu.Unlock()
		// failedID is cleared so that the next end is judged and
		// reported afresh, though it is the same container.
		t.deploying, t.cancelDeploy, t.deployedAt, t.failedID = false, nil, time.Now(), ""
		if t.stopping {
			return
		}
		d.restarts(t).started()
		if err != nil {
			d.logger.Warn("restart failed", "assignment", t.id, "err", err)
		}
		d.poke()
	}()
}

// startContainers starts the containers, leaving out those with a restart
// policy of their own.
func (d *containerDriver) startContainers(ctx context.Context, ids []string) error {
	var start []string
	for _, id := range ids {
		if !d.cli.ownRestartPolicy(ctx, id) {
			start = append(start, id)
		}
	}
	if len(start) == 0 {
		return nil
	}
	if _, err := d.cli.run(ctx, append([]string{"start"}, start...)...); err != nil {
		return fmt.Errorf("docker start: %w", err)
	}
	return nil
}

// ownRestartPolicy reports whether Docker restarts the container itself (a
// compose service's `restart:`); a failed inspect says no.
func (c *dockerCLI) ownRestartPolicy(ctx context.Context, id string) bool {
	out, err := c.run(ctx, "inspect", "--format", "{{.HostConfig.RestartPolicy.Name}}", id)
	name := strings.TrimSpace(string(out))
	return err == nil && name != "" && name != "no"
}
