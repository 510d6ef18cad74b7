//go:build e2e

// Package e2e is the Docker fault suite: it brings up the repository's
// docker-compose deployment, drives the workload of package workload
// against every server while a nemesis injects faults from the host, and
// judges the recorded history with package check (DESIGN §5 guarantees).
//
// Every file carries the e2e build tag so that `go test ./...` never needs
// Docker; `make e2e` (smoke) and `make jepsen` (full matrix) run it.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// commandTimeoutHint is appended to errors of commands killed by their
// context, so a hung docker daemon is told apart from a failing command.
const commandTimeoutHint = " (context ended)"

// run executes name with args and returns its trimmed stdout. Stderr is
// folded into the error: docker's messages are the useful part.
func run(ctx context.Context, name string, args ...string) (string, error) {
	return runEnv(ctx, nil, name, args...)
}

// runEnv is run with extra environment variables (KEY=value) on top of
// this process's own.
func runEnv(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		hint := ""
		if ctx.Err() != nil {
			hint = commandTimeoutHint
		}
		return stdout.String(), fmt.Errorf("%s %s: %w: %s%s", name, strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()), hint)
	}
	return strings.TrimSpace(stdout.String()), nil
}

func docker(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "docker", args...)
}

// nsenterNet runs a host binary (iptables, tc) inside the network namespace
// of process pid, i.e. of one container, without needing the tool in the
// image (which is FROM scratch).
func nsenterNet(ctx context.Context, pid int, args ...string) (string, error) {
	full := append([]string{"-t", strconv.Itoa(pid), "-n"}, args...)
	return run(ctx, "nsenter", full...)
}

// containerPID is the host PID of a running container's first process. It
// changes on every restart, so callers look it up at the moment they act.
func containerPID(ctx context.Context, container string) (int, error) {
	out, err := docker(ctx, "inspect", "-f", "{{.State.Running}} {{.State.Pid}}", container)
	if err != nil {
		return 0, err
	}
	running, pidText, _ := strings.Cut(out, " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		return 0, fmt.Errorf("container %s: pid %q: %w", container, pidText, err)
	}
	if running != "true" || pid == 0 {
		return 0, fmt.Errorf("container %s is not running", container)
	}
	return pid, nil
}
