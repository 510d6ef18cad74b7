package worker

import (
	"context"
	"io"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/backoff"
)

// run registers the worker, then follows its assignments with blocking
// queries for as long as ctx lives. Every failure backs off and retries
// against the next server: a server failover never restarts running tasks.
func (w *Worker) run(ctx context.Context) {
	if err := w.cfg.Driver.Recover(ctx); err != nil && ctx.Err() == nil {
		w.logger.Warn("adopting the workloads of an earlier run failed", "err", err)
	}
	bo := backoff.New(100*time.Millisecond, 5*time.Second)
	reg := &registrationLog{logger: w.logger, node: w.cfg.NodeID, now: time.Now}
	registered, refusedTag := false, false
	var index uint64
	for ctx.Err() == nil {
		c, err := w.client()
		logged, refused := false, false // reg has said why registering failed
		if err == nil && !registered {
			if _, err = c.RegisterNode(ctx, w.cfg.Inventory); err == nil {
				registered = true
				reg.registered(c.Address())
				refusedTag = refusedTag && !w.advertiseRefused(ctx, false)
			} else if ctx.Err() == nil {
				logged, refused = true, reg.refused(err)
				refusedTag = refusedTag || (refused && w.advertiseRefused(ctx, true))
			}
		}
		if err == nil {
			index, err = w.poll(ctx, c, index)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			switch {
			case api.IsCode(err, api.CodeNotFound):
				registered = false // deregistered, or a restore dropped the node: register again
			case api.IsCode(err, api.CodeUnauthorized), api.IsCode(err, api.CodeForbidden):
				// The token was revoked while the node ran: registering again
				// is refused too, which says so at Error level and tells the
				// leader to keep work off the node.
				registered = false
			}
			if !logged {
				w.logger.Debug("worker loop retrying", "err", err)
			}
			if refused {
				bo.Saturate() // every server gives the same answer: no point hurrying
			}
			w.rotate()
			bo.Wait(ctx)
			continue
		}
		bo.Reset()
	}
}

// poll waits for the assignments to change past index and acts on them.
func (w *Worker) poll(ctx context.Context, c *api.Client, index uint64) (uint64, error) {
	list, meta, err := c.Assignments(ctx, w.cfg.NodeID, &api.QueryOptions{Index: index, Wait: w.cfg.PollWait})
	if err != nil {
		return index, err
	}
	if meta.Index < index {
		// The index went backwards (a restore, or another server): start over.
		meta.Index = 0
	}
	return meta.Index, w.reconcile(ctx, c, list)
}

// reconcile makes the driver match the assignments and reports every
// change. Tasks the server no longer lists are stopped: after a partition
// heals, nothing keeps running that is not assigned here.
func (w *Worker) reconcile(ctx context.Context, c *api.Client, list []api.Assignment) error {
	listed, held := map[string]bool{}, map[string]bool{}
	for _, id := range w.cfg.Driver.Running() {
		held[id] = true
	}
	for _, a := range list {
		listed[a.ID] = true
		if ranToItsEnd(a) && !held[a.ID] {
			continue
		}
		restarted := w.restartOnNewGeneration(ctx, a)
		state, msg := w.cfg.Driver.Ensure(ctx, a)
		if restarted {
			w.markRestarting(a.ID, false)
		}
		report := api.AssignmentStatus{State: state, Message: msg, Generation: a.Generation}
		if state == api.JobExited {
			report.ExitCode = w.exitCode(a.ID)
		}
		if state == "" || sameReport(a, report) {
			continue
		}
		if err := c.ReportStatus(ctx, w.cfg.NodeID, a.ID, report); err != nil {
			return err
		}
	}
	for id := range w.gens {
		if !listed[id] {
			delete(w.gens, id)
		}
	}
	for _, id := range w.cfg.Driver.Running() {
		if !listed[id] {
			w.logger.Info("stopping a task no longer assigned here", "assignment", id)
			if err := w.stopUnassigned(ctx, id); err != nil && ctx.Err() == nil {
				w.logger.Warn("stopping a task failed", "assignment", id, "err", err)
			}
		}
	}
	if s, ok := w.cfg.Driver.(sweeper); ok {
		s.sweep(list)
	}
	return nil
}

// ranToItsEnd: the servers have this generation of a batch job's exit. A
// driver that no longer holds the task (the worker restarted since) must
// not run it again: only a restart the bundle's policy decides does, by
// a new generation, which resets the status.
func ranToItsEnd(a api.Assignment) bool {
	return a.RunOnce && a.Desired == api.DesiredRun && a.Status == api.JobExited
}

// stopUnassigned is a task's last stop: a driver that tells it from a
// restart's stop (retirer) keeps a finished batch job's output.
func (w *Worker) stopUnassigned(ctx context.Context, id string) error {
	return stopWith(ctx, w.cfg.Driver, id, stopRetire)
}

// restartOnNewGeneration stops a job whose assignment's generation moved
// since the worker last saw it (an in-place launch change, a batch
// restart); the Ensure that follows starts it again with the assignment's
// launch, in the same directory when the driver can keep it (restarter):
// every run appends to the job's logs. A job first seen by this run of
// the worker is taken as current. It says whether it stopped the job,
// which reads restarting until the caller's Ensure.
func (w *Worker) restartOnNewGeneration(ctx context.Context, a api.Assignment) bool {
	if a.Desired != api.DesiredRun {
		return false
	}
	if w.gens == nil {
		w.gens = map[string]uint64{}
	}
	prev, seen := w.gens[a.ID]
	w.gens[a.ID] = a.Generation
	if !seen || prev == a.Generation {
		return false
	}
	w.logger.Info("restarting a job for its new generation", "assignment", a.ID, "generation", a.Generation)
	w.markRestarting(a.ID, true)
	if err := stopWith(ctx, w.cfg.Driver, a.ID, stopRestart); err != nil && ctx.Err() == nil {
		w.logger.Warn("stopping a job for its new generation failed", "assignment", a.ID, "err", err)
	}
	return true
}

// markRestarting records that a job is (or no longer is) between its
// stop for a new generation and its next start.
func (w *Worker) markRestarting(id string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !on {
		delete(w.restarting, id)
		return
	}
	if w.restarting == nil {
		w.restarting = map[string]bool{}
	}
	w.restarting[id] = true
}

// isRestarting: the job is between its stop for a new generation and its
// next start.
func (w *Worker) isRestarting(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restarting[id]
}

// exitCode asks the driver for an exited task's code.
func (w *Worker) exitCode(id string) *int {
	code := unknownExit
	if xc, ok := w.cfg.Driver.(ExitCoder); ok {
		if c, ok := xc.ExitCode(id); ok {
			code = c
		}
	}
	return &code
}

// sameReport: the server already has what the driver says.
func sameReport(a api.Assignment, r api.AssignmentStatus) bool {
	if r.State != a.Status || r.Message != a.Message {
		return false
	}
	return r.ExitCode == nil || (a.ExitCode != nil && *a.ExitCode == *r.ExitCode)
}

// reportEvents reports what the driver noticed on its own. A report that
// fails is not retried here: the next assignment poll compares the driver's
// state with the server's and reports the difference.
func (w *Worker) reportEvents(ctx context.Context, events <-chan TaskEvent) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			c, err := w.client()
			if err == nil {
				report := api.AssignmentStatus{State: ev.State, Message: ev.Message, Generation: ev.Generation}
				if ev.State == api.JobExited {
					code := ev.ExitCode
					report.ExitCode = &code
				}
				err = c.ReportStatus(ctx, w.cfg.NodeID, ev.ID, report)
			}
			if err != nil && ctx.Err() == nil {
				w.logger.Debug("reporting task event failed", "assignment", ev.ID, "err", err)
			}
		}
	}
}

// TemplateArchive fetches a template's archive from a server, trying the
// next one after a failure: the worker is the dispatcher's TemplateSource.
func (w *Worker) TemplateArchive(ctx context.Context, name, digest string) (io.ReadCloser, error) {
	var last error
	for range max(len(w.servers()), 1) {
		c, err := w.client()
		if err == nil {
			var rc io.ReadCloser
			if rc, err = c.TemplateArchive(ctx, name, digest); err == nil {
				return rc, nil
			}
			if api.IsCode(err, api.CodeNotFound) {
				return nil, err
			}
		}
		last = err
		if ctx.Err() != nil {
			break
		}
		w.rotate()
	}
	return nil, last
}
