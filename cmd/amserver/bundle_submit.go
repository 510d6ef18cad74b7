package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

const (
	// maxBlock is the longest blocking query the server honours.
	maxBlock = 5 * time.Minute
	// noProgressPause spaces out queries that returned nothing new.
	noProgressPause = 250 * time.Millisecond
)

func newBundleSubmitCmd(a *app) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "submit FILE|-",
		Short: "Submit a bundle from a JSON or YAML file (- for stdin)",
		Long: `Submit a bundle from a JSON or YAML file (- for stdin).

With --wait, follow the bundle until it is placed or degraded, printing each
state change, or until it is found unplaceable, then print why; a batch
bundle is followed until it ends, complete or failed (exit 1). The wait is
bounded by --timeout. With --json, the final answer has the shape of the
create response, holding the bundle as it was when the wait ended.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var spec api.BundleSpec
			if err := a.readInput(args[0], "bundle", &spec); err != nil {
				return err
			}
			// Pick the id here (the client would otherwise) so that errors
			// and the wait can name the bundle.
			if spec.ID == "" {
				spec.ID = api.NewID()
			}
			return a.submit(cmd, spec, wait)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the bundle is placed, a batch bundle until it ends (bounded by --timeout)")
	return cmd
}

func (a *app) submit(cmd *cobra.Command, spec api.BundleSpec, wait bool) error {
	c, ctx, cancel, err := a.connect(cmd)
	if err != nil {
		return err
	}
	defer cancel()
	resp, err := c.CreateBundle(ctx, spec)
	if err != nil {
		return about(err, "bundle", spec.ID)
	}
	out := cmd.OutOrStdout()
	printWarnings(cmd.ErrOrStderr(), resp.Warnings)
	verb := "submitted"
	if !resp.Created {
		verb = "was already submitted with this spec"
	}
	submitted := line("bundle %q %s (state %s, index %d)", spec.ID, verb, clean(resp.Bundle.State), resp.Bundle.ModifyIndex)
	if !wait {
		return a.emit(out, resp, submitted)
	}
	// While waiting, the text form is a running account; JSON stays a
	// single document, printed at the end.
	progress := io.Discard
	if !a.json {
		progress = out
	}
	_ = submitted(progress) // a failed terminal write has no one to report to
	final, waitErr := a.waitBundle(ctx, c, resp.Bundle, progress)
	if final != nil {
		resp.Bundle = *final
		if err := a.emit(out, resp, func(w io.Writer) error { return printWaitResult(w, &resp.Bundle) }); err != nil {
			return err
		}
	}
	return waitErr
}

// printWaitResult is the end of a wait's text: where the bundle runs, or
// why it cannot.
func printWaitResult(w io.Writer, b *api.Bundle) error {
	switch b.State {
	case api.StatePlaced, api.StateDegraded, api.StateComplete, api.StateFailed:
		printReplicas(w, b)
		printDegradations(w, b.Degradations, time.Now())
	case api.StateUnplaceable:
		printExplain(w, b.Explain)
	case api.StateScheduled:
		fmt.Fprintf(w, "bundle %q is scheduled to start at %s; not waiting for it\n", b.ID, clean(orDash(b.StartAt)))
	}
	return nil
}

// waitBundle follows a bundle with blocking queries until its state
// settles, printing every state change to progress. It returns the last
// bundle seen (nil when none could be read) and an error unless the bundle
// ended placed, degraded or scheduled.
func (a *app) waitBundle(ctx context.Context, c *api.Client, b api.Bundle, progress io.Writer) (*api.Bundle, error) {
	stamp := func(b *api.Bundle) {
		fmt.Fprintf(progress, "%s %s\n", time.Now().Format(time.TimeOnly), stateLine(b))
	}
	stamp(&b)
	index := b.ModifyIndex
	for !settled(&b) {
		next, meta, err := c.Bundle(ctx, b.ID, &api.QueryOptions{Stale: a.stale, Index: index, Wait: blockFor(ctx)})
		if err != nil {
			if ctx.Err() != nil {
				return &b, sentence(ctx.Err(), "bundle %q is still %s after %s (see --timeout)", b.ID, b.State, a.timeout)
			}
			return &b, about(err, "bundle", b.ID)
		}
		if meta.Index <= index {
			// No progress: the wait elapsed, or the server did not block
			// (no index at all). Pause so that a server answering at once
			// cannot make this loop spin; a done context ends the next query.
			sleep(ctx, noProgressPause)
		}
		index = nextIndex(index, meta.Index)
		if next.State != b.State {
			stamp(next)
		}
		b = *next
	}
	return &b, settledError(&b)
}

// settled reports whether waiting longer would not change the outcome:
// unplaceable bundles are retried only when the cluster changes, a
// scheduled one not before its start time. A batch bundle is waited for
// until it ends, complete or failed.
func settled(b *api.Bundle) bool {
	switch b.State {
	case api.StatePlaced, api.StateDegraded:
		return b.Kind != api.KindBatch
	case api.StateUnplaceable, api.StateScheduled, api.StateDeleting, api.StateComplete, api.StateFailed:
		return true
	}
	return false
}

func settledError(b *api.Bundle) error {
	switch b.State {
	case api.StateUnplaceable:
		return sentence(errors.New(b.State),
			"bundle %q is unplaceable for now; it is retried when the cluster changes", b.ID)
	case api.StateDeleting:
		return sentence(errors.New(b.State), "bundle %q is being deleted", b.ID)
	case api.StateFailed:
		return sentence(errors.New(b.State), "batch bundle %q failed: %s", b.ID, failedJob(b))
	}
	return nil
}

// failedJob says which job failed a batch bundle, and how: the first one
// that exited non-zero (the one that ended it; a bundle without a restart
// policy has no attempts to exhaust).
func failedJob(b *api.Bundle) string {
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.ExitCode != nil && *j.ExitCode != 0 {
				return fmt.Sprintf("job %s exited %d after %d restart(s)", j.Name, *j.ExitCode, j.Attempts)
			}
		}
	}
	return "a job exhausted its restart attempts"
}

// nextIndex is the index for the next blocking query. An index that went
// backwards (a restored snapshot, a lagging server) restarts from 0 so
// that the next query answers at once instead of blocking on the old value.
func nextIndex(prev, got uint64) uint64 {
	if got < prev {
		return 0
	}
	return got
}

// blockFor keeps each blocking query inside the command's deadline, so
// that the last one returns an answer rather than a timeout.
func blockFor(ctx context.Context) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return maxBlock
	}
	left := time.Until(deadline)
	// Leave a margin for the answer to travel back.
	return min(max(left-left/10, 10*time.Millisecond), maxBlock)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
