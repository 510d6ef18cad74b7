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
