package worker

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

func dockerLaunch(image string, env map[string]string) api.Launch {
	return api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: api.DriverDocker, Image: image, Env: env}}
}

// TestDockerLegacyLifecycle: a legacy docker launch runs one labelled
// container with its env and the identity; a restarted worker adopts it
// rather than starting it again; a stop removes it; one that exits
// non-zero fails with its code.
func TestDockerLegacyLifecycle(t *testing.T) {
	t.Parallel() // each its own node, data and containers; mostly waiting on Docker
	requireDocker(t)
	node, dataDir := testNode(), t.TempDir()
	t.Cleanup(func() { sweepNode(t, node) })
	d := newDispatcher(t, node, dataDir, nil, api.RuntimeDocker)
	a := assignment(node, "b1", "enc", dockerLaunch(testImage(t), map[string]string{"MODE": "live $1\nx"}), "")
	waitState(t, d, a, api.JobRunning, time.Minute)
	rows := containersOf(t, a.ID)
	if len(rows) != 1 || rows[0].Names != taskName(a.ID) {
		t.Fatalf("want one container named %s, got %+v", taskName(a.ID), rows)
	}
	l := inspectLabels(t, rows[0].ID)
	if l[labelBundle] != "b1" || l[labelJob] != "enc" || l[labelAssignment] != a.ID || l[labelNode] != node {
		t.Fatalf("labels %v", l)
	}
	waitLog(t, dataDir, a.ID, stdoutLog, envLine("MODE", "live $1\nx"), envLine("AMSERVER_ROLE", "primary"),
		envLine("AMSERVER_ASSIGNMENT", a.ID), "running")

	crash(d)
	again := newDispatcher(t, node, dataDir, nil, api.RuntimeDocker)
	if err := again.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := again.Running(); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("adopted %v", got)
	}
	waitState(t, again, a, api.JobRunning, time.Minute)
	if now := containersOf(t, a.ID); len(now) != 1 || now[0].ID != rows[0].ID {
		t.Fatalf("the adopted container was replaced: %+v, then %+v", rows, now)
	}

	a.Desired = api.DesiredStop
	waitState(t, again, a, api.JobStopped, time.Minute)
	if rows := containersOf(t, a.ID); len(rows) != 0 {
		t.Fatalf("containers left after stop: %+v", rows)
	}

	bad := assignment(node, "b2", "enc", dockerLaunch(testImage(t), map[string]string{
		"WORKLOAD_EXIT": "4", "WORKLOAD_STDERR": "no licence"}), api.RuntimeDocker)
	msg := waitState(t, again, bad, api.JobFailed, time.Minute)
	if !strings.Contains(msg, "exited with code 4") || !strings.Contains(msg, "no licence") {
		t.Fatalf("failure message %q", msg)
	}
	if err := again.Stop(context.Background(), bad.ID); err != nil {
		t.Fatal(err)
	}

	// An image that is not there fails the deploy; once the operator builds
	// it, the deploy is retried and succeeds.
	late := "amserver-test-late:" + randomHex(4)
	missing := assignment(node, "b3", "enc", dockerLaunch(late, nil), api.RuntimeDocker)
	if msg := waitState(t, again, missing, api.JobFailed, time.Minute); !strings.Contains(msg, "never pulls") {
		t.Fatalf("missing image message %q", msg)
	}
	if out, err := exec.Command("docker", "tag", testImage(t), late).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", late).Run() })
	waitState(t, again, missing, api.JobRunning, time.Minute)
	if err := again.Stop(context.Background(), missing.ID); err != nil {
		t.Fatal(err)
	}
}

// inspectMemory is a container's memory and memory+swap limits in bytes.
func inspectMemory(t *testing.T, id string) string {
	t.Helper()
	return inspectField(t, id, "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}")
}

// TestDockerMemoryLimit: a job's memoryLimitMiB is the container's memory
// limit, swap included; a workload that allocates beyond it is killed and
// fails; a job without a limit runs unlimited.
func TestDockerMemoryLimit(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	node, dataDir := testNode(), t.TempDir()
	t.Cleanup(func() { sweepNode(t, node) })
	d := newDispatcher(t, node, dataDir, nil, api.RuntimeDocker)
	limited := assignment(node, "b1", "enc", dockerLaunch(testImage(t), nil), api.RuntimeDocker)
	limited.MemoryLimitMiB = 64
	waitState(t, d, limited, api.JobRunning, time.Minute)
	if got := inspectMemory(t, containersOf(t, limited.ID)[0].ID); got != "67108864 67108864" {
		t.Fatalf("memory and memory+swap limits %q, want 64 MiB each", got)
	}
	free := assignment(node, "b2", "enc", dockerLaunch(testImage(t), nil), api.RuntimeDocker)
	waitState(t, d, free, api.JobRunning, time.Minute)
	if got := inspectMemory(t, containersOf(t, free.ID)[0].ID); got != "0 0" {
		t.Fatalf("a job without a limit got %q", got)
	}
	hog := assignment(node, "b3", "enc", dockerLaunch(testImage(t), map[string]string{"WORKLOAD_ALLOC_MIB": "256"}), api.RuntimeDocker)
	hog.MemoryLimitMiB = 64
	msg := waitState(t, d, hog, api.JobFailed, time.Minute)
	if strings.Contains(logOf(dataDir, hog.ID, stdoutLog), "allocated") {
		t.Fatalf("the workload allocated 256 MiB under a 64 MiB limit: %s", msg)
	}
}
