package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/amserver/amserver/api"
)

// dockerBackend runs a legacy launch with driver docker: one container
// from the job's image with its command and env, the identity variables
// and amserver's labels, never pulled, named after the assignment so that
// it can never run twice.
type dockerBackend struct {
	cli *dockerCLI
}

func (b *dockerBackend) describe(psRow) string  { return "container" }
func (b *dockerBackend) logPrefix(psRow) string { return "" }

func (b *dockerBackend) deploy(ctx context.Context, a api.Assignment, spec, name, _ string) error {
	job := legacyJob(a.Launch)
	if job.Image == "" {
		return permanent(errors.New("a docker launch needs an image"))
	}
	env, err := dockerEnv(a, job)
	if err != nil {
		return permanent(err)
	}
	if err := b.cli.imagePresent(ctx, job.Image); err != nil {
		return err
	}
	// A container of an older spec (a promotion, a new launch) goes first.
	if err := b.remove(ctx, name); err != nil {
		return err
	}
	args := []string{"run", "-d", "--name", name, "--restart", "no"}
	labels := containerLabels(a, api.RuntimeDocker, spec)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	for _, v := range env {
		args = append(args, "-e", v.Name+"="+v.Value)
	}
	if m := a.MemoryLimitMiB; m > 0 {
		// Swap equal to memory: the limit holds for RAM and swap together.
		limit := strconv.FormatInt(m, 10) + "m"
		args = append(args, "--memory", limit, "--memory-swap", limit)
	}
	args = append(append(args, "--", job.Image), job.Command...)
	if _, err := b.cli.run(ctx, args...); err != nil {
		return fmt.Errorf("docker run: %w", err)
	}
	return nil
}

// dockerEnv is the container's environment: the identity, then the job's
// env (which may not redefine the identity).
func dockerEnv(a api.Assignment, job api.LegacyJob) ([]envVar, error) {
	env := identityEnv(a)
	for _, k := range slices.Sorted(maps.Keys(job.Env)) {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(job.Env[k], 0):
			return nil, fmt.Errorf("env %q: a name holds neither \"=\" nor NUL and is not empty", k)
		case strings.HasPrefix(strings.ToUpper(k), "AMSERVER_"):
			return nil, fmt.Errorf("env %q: AMSERVER_* names are reserved", k)
		}
		env = append(env, envVar{k, job.Env[k]})
	}
	return env, nil
}

// remove stops the named container (SIGTERM, then SIGKILL after 10 s)
// and removes it with its anonymous volumes; a missing one is fine.
func (b *dockerBackend) remove(ctx context.Context, name string) error {
	rows, err := b.cli.ps(ctx, "name=^/?"+name+"$")
	if err != nil || len(rows) == 0 {
		return err
	}
	if rows[0].State == "running" {
		_, _ = b.cli.run(ctx, "stop", "-t", "10", name)
	}
	if _, err := b.cli.run(ctx, "rm", "-f", "-v", name); err != nil {
		return fmt.Errorf("remove container %s: %w", name, err)
	}
	return nil
}

// teardown removes the container with its anonymous volumes, restart or
// not: a new container would not mount them again.
func (b *dockerBackend) teardown(ctx context.Context, name, _ string, _ bool) error {
	return b.remove(ctx, name)
}
