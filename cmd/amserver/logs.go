package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

// logFlags are the flags of every command that prints an assignment's
// output, and how it prints it.
type logFlags struct {
	follow, stderr bool
	tail           int
}

func (l *logFlags) register(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.BoolVarP(&l.follow, "follow", "f", false, "go on printing what the "+what+" writes")
	f.IntVar(&l.tail, "tail", api.TailAll, "start with the last N lines (-1: everything)")
	f.BoolVar(&l.stderr, "stderr", false, "print the "+what+"'s stderr instead of its stdout")
}

// connect checks the flags and connects, bounding the command: a follow
// has no natural end, so --timeout applies to it only when given.
func (l *logFlags) connect(a *app, cmd *cobra.Command) (*api.Client, context.Context, context.CancelFunc, error) {
	if l.tail < api.TailAll || l.tail > api.MaxLogTail {
		return nil, nil, nil, usagef("--tail %d: want -1 (everything) to %d", l.tail, api.MaxLogTail)
	}
	c, ctx, cancel, err := a.connect(cmd)
	if err != nil || !l.follow || cmd.Flags().Changed("timeout") {
		return c, ctx, cancel, err
	}
	cancel()
	ctx, cancel = context.WithCancel(cmd.Context())
	return c, ctx, cancel, nil
}

// print copies assignment id's output to the command's stdout.
func (l *logFlags) print(ctx context.Context, cmd *cobra.Command, c *api.Client, id string) error {
	o := api.LogOptions{Follow: l.follow, Tail: l.tail, Stream: api.LogStdout}
	if l.stderr {
		o.Stream = api.LogStderr
	}
	body, err := c.AssignmentLogs(ctx, id, o)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	if _, err := io.Copy(cmd.OutOrStdout(), body); err != nil && ctx.Err() == nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("the logs of %s broke off (its worker or the server went away): %w", id, err)
		}
		return fmt.Errorf("reading the logs of %s: %w", id, err)
	}
	return nil
}

func newLogsCmd(a *app) *cobra.Command {
	var (
		lf      logFlags
		replica int
	)
	cmd := &cobra.Command{
		Use:   "logs BUNDLE [JOB]",
		Short: "Print a job's output (stdout, or stderr with --stderr), following it with -f",
		Long: `Print the output of one job of a bundle, as its worker keeps it: the
primary's (replica 0) unless --replica names another, and the bundle's first
job unless JOB names one. The server that answers proxies to the worker
that runs the job. A finished batch job's output stays readable for a while
(its worker's --retain-finished, 1 h by default). A node service's output:
amserver service logs.

With -f the command goes on printing what the job writes until the job
ends or the command is interrupted (--timeout applies only when given).
--tail N starts with the last N lines (-1, the default: everything).`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: a.completeBundles(),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := lf.connect(a, cmd)
			if err != nil {
				return err
			}
			defer cancel()
			b, _, err := c.Bundle(ctx, args[0], a.query())
			if err != nil {
				return err
			}
			job := ""
			if len(args) == 2 {
				job = args[1]
			}
			id, err := assignmentOf(b, replica, job)
			if err != nil {
				return err
			}
			return lf.print(ctx, cmd, c, id)
		},
	}
	lf.register(cmd, "job")
	cmd.Flags().IntVar(&replica, "replica", 0, "the replica (0: the primary, 1: the backup)")
	return cmd
}

// assignmentOf is the assignment of job (the first job when empty) of
// replica index of b.
func assignmentOf(b *api.Bundle, replica int, job string) (string, error) {
	if replica < 0 || replica >= len(b.Replicas) {
		return "", usagef("bundle %s has %d replicas: --replica %d does not exist", b.ID, len(b.Replicas), replica)
	}
	r := b.Replicas[replica]
	for _, j := range r.Jobs {
		if job != "" && j.Name != job {
			continue
		}
		if j.AssignmentID == "" {
			return "", fmt.Errorf("job %s of bundle %s (replica %d) is not placed (bundle %s)", j.Name, b.ID, replica, b.State)
		}
		return j.AssignmentID, nil
	}
	if job == "" {
		return "", fmt.Errorf("replica %d of bundle %s has no jobs", replica, b.ID)
	}
	return "", usagef("bundle %s has no job %q", b.ID, job)
}
