//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// SaveLogs writes each container's log since the given time into
// dir/logs/<node>.log: the servers' own account of elections, removals
// and rejected commands is the first evidence when a checker complains.
func (c *Cluster) SaveLogs(ctx context.Context, dir string, since time.Time) error {
	dir = filepath.Join(dir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("e2e: logs dir: %w", err)
	}
	var errs []error
	for _, n := range slices.Concat(c.Servers, c.Workers) {
		// The agents log to stderr; keep both streams in one file.
		out, err := exec.CommandContext(ctx, "docker", "logs", "--timestamps",
			"--since", since.Format(time.RFC3339Nano), n.Container).CombinedOutput()
		if err != nil {
			errs = append(errs, fmt.Errorf("e2e: docker logs %s: %w", n.ID, err))
		}
		if err := os.WriteFile(filepath.Join(dir, n.ID+".log"), out, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("e2e: write log of %s: %w", n.ID, err))
		}
	}
	return errors.Join(errs...)
}

// SaveComposeLogs writes docker-compose's interleaved log of the whole
// project to path. It works even when the containers could not be
// inspected, which is when a failed bring-up needs it.
func (c *Cluster) SaveComposeLogs(ctx context.Context, path string) error {
	cmd := exec.CommandContext(ctx, "docker-compose", composeArgs(c.Project, c.files, "logs", "--no-color", "--timestamps")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("e2e: compose logs %s: %w", c.Project, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("e2e: logs dir: %w", err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("e2e: write compose logs: %w", err)
	}
	return nil
}

// UseLog routes the harness's and the nemeses' log lines to logf (the
// current subtest's) until the returned function restores the previous
// one: logging through a finished subtest would panic.
func (c *Cluster) UseLog(logf func(string, ...any)) (restore func()) {
	prev := c.logf
	c.logf = logf
	return func() { c.logf = prev }
}
