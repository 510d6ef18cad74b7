package worker

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// fastRestarts makes a dispatcher's container driver count a restarted run
// stable after a second, so that a test sees it read running again soon.
func fastRestarts(d *Dispatcher, runtime string) *containerDriver {
	c := d.drivers[runtime].(*containerDriver)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stableAfter = time.Second
	return c
}

// inspectField is one field of a container's docker inspect, by template.
func inspectField(t *testing.T, id, format string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", format, id).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestDockerRestartsAContainerThatEnds: a service's container that exits
// (non-zero, or 0: the workload is done running either way) is started
// again, the same container, after the backoff; the restarted run reads
// failed until it has stayed up, then running. A worker that restarts
// while a restart is pending adopts the container and starts it, once; a
// stop while a restart is pending leaves nothing behind. The driver used
// to leave the container exited and the job failed (or stopped).
func TestDockerRestartsAContainerThatEnds(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	for _, code := range []string{"3", "0"} {
		t.Run("exit "+code, func(t *testing.T) {
			t.Parallel()
			node, dataDir := testNode(), t.TempDir()
			t.Cleanup(func() { sweepNode(t, node) })
			d := newDispatcher(t, node, dataDir, nil, api.RuntimeDocker)
			fastRestarts(d, api.RuntimeDocker)
			env := map[string]string{"WORKLOAD_EXIT": code, "WORKLOAD_AFTER": "4s", "WORKLOAD_STDERR": "lost the device"}
			a := assignment(node, "b1", "enc", dockerLaunch(testImage(t), env), api.RuntimeDocker)
			d.Ensure(t.Context(), a)
			want := []string{api.JobRunning, api.JobFailed, api.JobRunning, api.JobFailed}
			if states := collectStates(t, d, a.ID, len(want), 2*time.Minute); !slices.Equal(states, want) {
				t.Fatalf("states %v, want %v", states, want)
			}
			if _, msg := d.Ensure(t.Context(), a); !strings.Contains(msg, "container exited with code "+code) {
				t.Fatalf("failure message %q", msg)
			}
			rows := containersOf(t, a.ID)
			if len(rows) != 1 {
				t.Fatalf("want the one container started again, got %+v", rows)
			}

			// The worker dies while the restart waits (2 s, the second
			// delay); its next run adopts the container and starts it.
			crash(d)
			again := newDispatcher(t, node, dataDir, nil, api.RuntimeDocker)
			fastRestarts(again, api.RuntimeDocker)
			if err := again.Recover(t.Context()); err != nil {
				t.Fatal(err)
			}
			waitState(t, again, a, api.JobRunning, time.Minute)
			if now := containersOf(t, a.ID); len(now) != 1 || now[0].ID != rows[0].ID {
				t.Fatalf("the adopted container was replaced: %+v, then %+v", rows, now)
			}

			// It fails again; the stop comes while its restart is pending.
			waitState(t, again, a, api.JobFailed, time.Minute)
			a.Desired = api.DesiredStop
			waitState(t, again, a, api.JobStopped, time.Minute)
			if rows := containersOf(t, a.ID); len(rows) != 0 {
				t.Fatalf("containers left after stop: %+v", rows)
			}
		})
	}
}

// TestComposeRestartsAServiceThatEnds: in a service's stack, a container
// that exits non-zero is started again (the same container) and the job
// reads running once it has stayed up; a one-shot that exited 0 (an init
// step) is left as it is; a container with a `restart:` policy of its own
// is left to Docker, and the driver does not start it once Docker gave up.
func TestComposeRestartsAServiceThatEnds(t *testing.T) {
	t.Parallel()
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	d := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	c := fastRestarts(d, api.RuntimeCompose)
	params := map[string]string{"IMAGE": testImage(t), "GREETING": "hi"}

	ref := src.add("crashy", tarball(t, stackFiles(t, `  init:
    image: ${IMAGE}
    environment:
      WORKLOAD_EXIT: "0"
  bad:
    image: ${IMAGE}
    environment:
      WORKLOAD_EXIT: "3"
      WORKLOAD_AFTER: 4s
`)))
	a := assignment(node, "b1", "web", composeLaunch(ref, params), api.RuntimeCompose)
	d.Ensure(t.Context(), a)
	if states := collectStates(t, d, a.ID, 1, 2*time.Minute); states[0] != api.JobRunning {
		t.Fatalf("first state %v", states)
	}
	init, bad := serviceContainer(t, a.ID, "init"), serviceContainer(t, a.ID, "bad")
	initStarted, badStarted := inspectField(t, init, "{{.State.StartedAt}}"), inspectField(t, bad, "{{.State.StartedAt}}")
	want := []string{api.JobFailed, api.JobRunning, api.JobFailed}
	if states := collectStates(t, d, a.ID, len(want), 2*time.Minute); !slices.Equal(states, want) {
		t.Fatalf("states after the first %v, want %v", states, want)
	}
	if got := inspectField(t, bad, "{{.State.StartedAt}}"); got == badStarted {
		t.Fatal("the failed container was not started again")
	}
	if got := inspectField(t, init, "{{.State.StartedAt}}"); got != initStarted {
		t.Fatalf("the one-shot that exited 0 was started again (%s, then %s)", initStarted, got)
	}
	if got := serviceContainer(t, a.ID, "bad"); got != bad {
		t.Fatalf("the failed container was replaced (%s, then %s)", bad, got)
	}
	a.Desired = api.DesiredStop
	waitState(t, d, a, api.JobStopped, time.Minute)

	own := src.add("own", tarball(t, stackFiles(t, `  flaky:
    image: ${IMAGE}
    restart: on-failure:1
    environment:
      WORKLOAD_EXIT: "5"
`)))
	b := assignment(node, "b2", "web", composeLaunch(own, params), api.RuntimeCompose)
	waitState(t, d, b, api.JobFailed, 2*time.Minute)
	flaky := serviceContainer(t, b.ID, "flaky")
	// Docker gave up after its one restart; the driver has judged the
	// container since (it found the restart Docker's) and starts nothing.
	poll.Eventually(t, time.Minute, "the driver to leave flaky to Docker", func() error {
		c.mu.Lock()
		left := c.tasks[b.ID] != nil && c.tasks[b.ID].leftToDocker == flaky
		c.mu.Unlock()
		return poll.Check(left && inspectField(t, flaky, "{{.State.Status}}") == "exited", "not yet")
	})
	if n := inspectField(t, flaky, "{{.RestartCount}}"); n != "1" {
		t.Fatalf("flaky restarted %s times, want Docker's 1", n)
	}
	c.mu.Lock()
	pending := !c.tasks[b.ID].restartAt.IsZero()
	c.mu.Unlock()
	if pending {
		t.Fatal("a restart is pending for a container Docker restarts")
	}
	b.Desired = api.DesiredStop
	waitState(t, d, b, api.JobStopped, time.Minute)
}

// serviceContainer is the id of the container of a compose service of
// assignment id.
func serviceContainer(t *testing.T, id, service string) string {
	t.Helper()
	for _, r := range containersOf(t, id) {
		if r.Service == service {
			return r.ID
		}
	}
	t.Fatalf("no container of service %s in %s", service, id)
	return ""
}
