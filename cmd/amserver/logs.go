package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newLogsCmd(a *app) *cobra.Command {
	var (
		follow, stderr bool
		tail, replica  int
	)
	cmd := &cobra.Command{
		Use:   "logs BUNDLE [JOB]",
		Short: "Print a job's output (stdout, or stderr with --stderr), following it with -f",
		Long: `Print the output of one job of a bundle, as its worker keeps it: the
primary's (replica 0) unless --replica names another, and the bundle's first
job unless JOB names one. The server that answers proxies to the worker
that runs the job. A finished batch job's output stays readable for a while
(its worker's --retain-finished, 1 h by default).

With -f the command goes on printing what the job writes until the job
ends or the command is interrupted (--timeout applies only when given).
--tail N starts with the last N lines (-1, the default: everything).`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: a.completeBundles(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < api.TailAll || tail > api.MaxLogTail {
				return usagef("--tail %d: want -1 (everything) to %d", tail, api.MaxLogTail)
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := a.context(cmd)
			if follow && !cmd.Flags().Changed("timeout") {
				ctx, cancel = context.WithCancel(cmd.Context()) // a follow has no natural end
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
			o := api.LogOptions{Follow: follow, Tail: tail, Stream: api.LogStdout}
			if stderr {
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
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "go on printing what the job writes")
	f.IntVar(&tail, "tail", api.TailAll, "start with the last N lines (-1: everything)")
	f.BoolVar(&stderr, "stderr", false, "print the job's stderr instead of its stdout")
	f.IntVar(&replica, "replica", 0, "the replica (0: the primary, 1: the backup)")
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
