package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

func nextEvent(t *testing.T, d Driver) TaskEvent {
	t.Helper()
	select {
	case ev := <-d.Events():
		return ev
	case <-time.After(15 * time.Second):
		t.Fatal("no driver event")
		return TaskEvent{}
	}
}

// TestExecDriverLifecycle: the child sees its identity in the environment,
// is pinned to its core, is restarted after a crash, learns a promotion
// through its role file and SIGHUP, and is gone after a desired stop.
func TestExecDriverLifecycle(t *testing.T) {
	dir := t.TempDir()
	d, err := NewExecDriver(filepath.Join(dir, "tasks"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.stopGrace = 2 * time.Second
	d.stableAfter = 100 * time.Millisecond // the run after the crash stays up
	out := filepath.Join(dir, "out")
	core := runtime.NumCPU() - 1
	script := `echo "$AMSERVER_BUNDLE $AMSERVER_JOB $AMSERVER_ROLE $AMSERVER_EPOCH $AMSERVER_CORES $CUSTOM" >> ` + out + `
grep Cpus_allowed_list /proc/self/status >> ` + out + `
trap 'cat "$AMSERVER_STATE_FILE" >> ` + out + `' HUP
test -f ` + out + `.crashed || { touch ` + out + `.crashed; echo "capture card busy" >&2; exit 3; }
echo $$ > ` + out + `.pid
while true; do sleep 0.1; done`
	a := api.Assignment{
		ID: "b1:0:enc@w1", BundleID: "b1", Job: "enc", NodeID: "w1", Role: api.RoleBackup, Epoch: 1, Desired: "run",
		Cores: []int{core}, Launch: api.Launch{Driver: "exec", Command: []string{"sh", "-c", script}, Env: map[string]string{"CUSTOM": "x"}},
	}
	ctx := context.Background()
	d.Ensure(ctx, a)
	if ev := nextEvent(t, d); ev.State != api.JobRunning {
		t.Fatalf("first event %+v", ev)
	}
	if ev := nextEvent(t, d); ev.State != api.JobFailed || ev.Message != "sh exited with code 3: capture card busy" {
		t.Fatalf("crash event %+v", ev)
	}
	if ev := nextEvent(t, d); ev.State != api.JobRunning {
		t.Fatalf("restart event %+v", ev)
	}
	poll.Eventually(t, 10*time.Second, "pid file", func() error { _, err := os.Stat(out + ".pid"); return err })
	body, _ := os.ReadFile(out)
	if !strings.Contains(string(body), "b1 enc backup 1 "+strconv.Itoa(core)+" x") {
		t.Fatalf("environment not passed: %q", body)
	}
	if !strings.Contains(string(body), "Cpus_allowed_list:\t"+strconv.Itoa(core)+"\n") {
		t.Fatalf("child not pinned to core %d: %q", core, body)
	}

	a.Role, a.Epoch = api.RolePrimary, 2
	if state, _ := d.Ensure(ctx, a); state != api.JobRunning {
		t.Fatalf("after promotion: %s", state)
	}
	poll.Eventually(t, 10*time.Second, "role file re-read on SIGHUP", func() error {
		b, _ := os.ReadFile(out)
		return poll.Check(strings.Contains(string(b), `"epoch":2`) && strings.Contains(string(b), `"role":"primary"`), "the child wrote %q", b)
	})

	pidBytes, _ := os.ReadFile(out + ".pid")
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidBytes)))
	a.Desired = "stop"
	if state, _ := d.Ensure(ctx, a); state != api.JobStopped {
		t.Fatalf("desired stop: %s", state)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("process %d still running after stop", pid)
	}
	if len(d.Running()) != 0 {
		t.Fatalf("driver still holds %v", d.Running())
	}
}

func TestExecDriverWithoutCommandFails(t *testing.T) {
	d, err := NewExecDriver(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	state, msg := d.Ensure(context.Background(), api.Assignment{ID: "x", Desired: "run"})
	if state != api.JobFailed || msg == "" {
		t.Fatalf("got %s %q", state, msg)
	}
}

// TestExecFailureQuotesItsOwnRun: every run of a task appends to its
// stderr.log, and a failure's message quotes the last lines of the run
// that failed, not an earlier run's too (a crash loop's message read as if
// one run had printed each earlier run's lines).
func TestExecFailureQuotesItsOwnRun(t *testing.T) {
	dir := t.TempDir()
	d, err := NewExecDriver(filepath.Join(dir, "tasks"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.stopGrace = 2 * time.Second
	count := filepath.Join(dir, "runs")
	script := `n=$(( $(cat ` + count + ` 2>/dev/null || echo 0) + 1 )); echo $n > ` + count + `; echo "oops $n" >&2; exit 3`
	a := assignment("w1", "b1", "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", script}}, api.RuntimeExec)
	d.Ensure(t.Context(), a)
	t.Cleanup(func() { _ = d.Stop(context.Background(), a.ID) })
	for {
		ev := nextEvent(t, d)
		if ev.State != api.JobFailed || !strings.Contains(ev.Message, "oops 2") {
			continue
		}
		if want := "sh exited with code 3: oops 2"; ev.Message != want {
			t.Fatalf("the second run's failure says %q, want %q", ev.Message, want)
		}
		return
	}
}

// TestExecCrashLoopReadsFailed: a task that crashes at every start reads
// running at its first start only; its restarts, each up for an instant,
// read failed (a service's rollout counted each brief start an available
// replica and went on to the next, until every replica crashed).
func TestExecCrashLoopReadsFailed(t *testing.T) {
	d, err := NewExecDriver(filepath.Join(t.TempDir(), "tasks"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.stopGrace = 2 * time.Second
	a := assignment("w1", "b1", "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", "echo bad version >&2; exit 3"}}, api.RuntimeExec)
	d.Ensure(t.Context(), a)
	t.Cleanup(func() { _ = d.Stop(context.Background(), a.ID) })
	if ev := nextEvent(t, d); ev.State != api.JobRunning {
		t.Fatalf("first event %+v", ev)
	}
	for failures := 0; failures < 3; {
		switch ev := nextEvent(t, d); ev.State {
		case api.JobFailed:
			failures++
		default:
			t.Fatalf("after %d failures: %+v", failures, ev)
		}
	}
}

// collectStates gathers the states the driver reports for id until it has
// n of them (the first compile of a module under the race detector, or a
// container's start on a loaded host, can take longer than nextEvent's
// wait).
func collectStates(t *testing.T, d Driver, id string, n int, within time.Duration) []string {
	t.Helper()
	var states []string
	poll.Eventually(t, within, fmt.Sprintf("%d states of %s", n, id), func() error {
		for len(states) < n {
			select {
			case ev := <-d.Events():
				if ev.ID == id {
					states = append(states, ev.State)
				}
			default:
				return fmt.Errorf("states so far %v", states)
			}
		}
		return nil
	})
	return states
}

// TestExecStopDuringRestartDelay: a stop that comes while a crashed
// service waits out its restart delay ends the task there; the loop ran
// the command once more after the stop, which then waited for that run.
func TestExecStopDuringRestartDelay(t *testing.T) {
	dir := t.TempDir()
	d, err := NewExecDriver(filepath.Join(dir, "tasks"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.stopGrace = 2 * time.Second
	runs := filepath.Join(dir, "runs")
	a := assignment("w1", "b1", "job", api.Launch{Driver: api.DriverExec,
		Command: []string{"sh", "-c", "echo run >> " + runs + "; exit 3"}}, api.RuntimeExec)
	d.Ensure(t.Context(), a)
	for ev := nextEvent(t, d); ev.State != api.JobFailed; ev = nextEvent(t, d) {
	}
	// The first restart waits restartMin (a second): the stop lands in it.
	if err := d.Stop(t.Context(), a.ID); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(body), "run\n"); n != 1 {
		t.Fatalf("the command ran %d times; a stop during the restart delay must not run it again", n)
	}
}
