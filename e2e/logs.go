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
