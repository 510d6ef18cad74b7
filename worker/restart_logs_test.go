package worker

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// lastWords is what every attempt of the batch jobs below writes to
// stderr before it exits 4 (the test workload's own line; the exec job's
// script says the same).
const lastWords = "exiting with code 4"

// TestBatchRestartsKeepEveryAttemptsLogs: a batch job that the servers
// restart (a new generation each time, as the bundle's restart policy
// does) runs again in the same directory, whatever its runtime, so that
// its log holds every attempt's output, and its last stop keeps all of it
// in the retain store. The worker used to stop the job for a new
// generation with Stop, which removed its directory: only the last
// attempt's output was left.
func TestBatchRestartsKeepEveryAttemptsLogs(t *testing.T) {
	const attempts = 3
	for _, tc := range []struct {
		runtime string
		launch  func(t *testing.T, src *fakeTemplates) api.Launch
	}{
		{api.RuntimeExec, func(*testing.T, *fakeTemplates) api.Launch {
			return api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", "echo attempt; echo " + lastWords + " >&2; exit 4"}}
		}},
		{api.RuntimeWasm, func(t *testing.T, src *fakeTemplates) api.Launch {
			ref := src.add("mod", tarball(t, map[string][]byte{"main.wasm": testModule(t)}))
			return wasmLaunch(ref, map[string]string{"WORKLOAD_EXIT": "4"})
		}},
		{api.RuntimeDocker, func(t *testing.T, _ *fakeTemplates) api.Launch {
			requireDocker(t)
			return dockerLaunch(testImage(t), map[string]string{"WORKLOAD_EXIT": "4"})
		}},
		{api.RuntimeCompose, func(t *testing.T, src *fakeTemplates) api.Launch {
			requireCompose(t)
			ref := src.add("batch", tarball(t, map[string][]byte{"compose.yaml": []byte(`services:
  etl:
    image: ${IMAGE}
    environment:
      WORKLOAD_EXIT: "4"
`)}))
			return composeLaunch(ref, map[string]string{"IMAGE": testImage(t)})
		}},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			t.Parallel() // each its own node and data; mostly waiting on Docker or a compile
			node, src, dataDir := testNode(), &fakeTemplates{}, t.TempDir()
			launch := tc.launch(t, src)
			if tc.runtime == api.RuntimeDocker || tc.runtime == api.RuntimeCompose {
				t.Cleanup(func() { sweepNode(t, node) })
			}
			d := newDispatcher(t, node, dataDir, src, tc.runtime)
			w := &Worker{cfg: Config{NodeID: node, Driver: d}, logger: slog.New(slog.DiscardHandler)}
			c := statusServer(t)
			a := assignment(node, "bt", "job", launch, tc.runtime)
			a.RunOnce = true
			for gen := range uint64(attempts) {
				a.Generation, a.Status, a.Message, a.ExitCode = gen, api.JobAssigned, "", nil
				if err := w.reconcile(t.Context(), c, []api.Assignment{a}); err != nil {
					t.Fatal(err)
				}
				waitState(t, d, a, api.JobExited, 2*time.Minute)
				waitAttempts(t, dataDir, a.ID, int(gen)+1)
			}
			// The bundle ended: its last stop keeps every attempt's output.
			if err := w.reconcile(t.Context(), c, nil); err != nil {
				t.Fatal(err)
			}
			_, body := readAll(t, getLogs(t, t.Context(), logServer(t, d), a.ID, "reader", url.Values{"stream": {"stderr"}}))
			if n := strings.Count(body, lastWords); n != attempts {
				t.Fatalf("the retained stderr holds %d attempts, want %d:\n%s", n, attempts, body)
			}
		})
	}
}

// waitAttempts waits for the task's stderr.log to hold n attempts' last
// words: no more (a container's output copied twice), no fewer.
func waitAttempts(t *testing.T, dataDir, id string, n int) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("%d attempts in the log", n), func() error {
		body := logOf(dataDir, id, stderrLog)
		return poll.Check(strings.Count(body, lastWords) == n, "stderr.log holds:\n%s", body)
	})
}

// TestRolloutKeepsLogsAndFollowers: a service whose launch changes in
// place (a new generation: a rollout, a node service's update; here also
// one that moves from exec to docker) is stopped and started again, and
// its log goes on: the first run's lines, its goodbye among them, then the
// second run's, each once; and a follower that was reading goes on into
// the second run instead of taking the stop for the job's end.
func TestRolloutKeepsLogsAndFollowers(t *testing.T) {
	// The exec service says what the test workload says: "running", then
	// "stopping" at SIGTERM.
	execLaunch := api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c",
		`echo running; trap 'echo stopping; exit 0' TERM; while :; do sleep 0.2; done`}}
	imageLaunch := func(t *testing.T) api.Launch {
		return dockerLaunch(testImage(t), map[string]string{"RUN": "1"})
	}
	for _, tc := range []struct {
		name     string
		runtimes []string
		launches func(t *testing.T, src *fakeTemplates) [2]api.Assignment
	}{
		{"exec", []string{api.RuntimeExec}, func(*testing.T, *fakeTemplates) [2]api.Assignment {
			return [2]api.Assignment{{Launch: execLaunch, Runtime: api.RuntimeExec}, {Launch: execLaunch, Runtime: api.RuntimeExec}}
		}},
		{"docker", []string{api.RuntimeDocker}, func(t *testing.T, _ *fakeTemplates) [2]api.Assignment {
			requireDocker(t)
			return [2]api.Assignment{{Launch: imageLaunch(t), Runtime: api.RuntimeDocker}, {Launch: imageLaunch(t), Runtime: api.RuntimeDocker}}
		}},
		{"compose", []string{api.RuntimeCompose}, func(t *testing.T, src *fakeTemplates) [2]api.Assignment {
			requireCompose(t)
			ref := src.add("svc", tarball(t, map[string][]byte{"compose.yaml": []byte("services:\n  web:\n    image: ${IMAGE}\n")}))
			l := composeLaunch(ref, map[string]string{"IMAGE": testImage(t)})
			return [2]api.Assignment{{Launch: l, Runtime: api.RuntimeCompose}, {Launch: l, Runtime: api.RuntimeCompose}}
		}},
		{"exec to docker", []string{api.RuntimeExec, api.RuntimeDocker}, func(t *testing.T, _ *fakeTemplates) [2]api.Assignment {
			requireDocker(t)
			return [2]api.Assignment{{Launch: execLaunch, Runtime: api.RuntimeExec}, {Launch: imageLaunch(t), Runtime: api.RuntimeDocker}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own node and data; mostly waiting on Docker
			node, src, dataDir := testNode(), &fakeTemplates{}, t.TempDir()
			runs := tc.launches(t, src)
			if tc.name != "exec" {
				t.Cleanup(func() { sweepNode(t, node) })
			}
			d := newDispatcher(t, node, dataDir, src, tc.runtimes...)
			w := &Worker{cfg: Config{NodeID: node, Driver: d}, logger: slog.New(slog.DiscardHandler)}
			c, srv := statusServer(t), workerLogServer(t, w)
			a := assignment(node, "svc", "web", runs[0].Launch, runs[0].Runtime)
			if err := w.reconcile(t.Context(), c, []api.Assignment{a}); err != nil {
				t.Fatal(err)
			}
			waitState(t, d, a, api.JobRunning, 2*time.Minute)
			waitLines(t, "stdout.log", func() string { return logOf(dataDir, a.ID, stdoutLog) }, "running")
			followed := follow(t, srv, a.ID)
			waitLines(t, "the follower", followed, "running")

			a.Generation, a.Launch, a.Runtime, a.Status = 1, runs[1].Launch, runs[1].Runtime, api.JobRunning
			if err := w.reconcile(t.Context(), c, []api.Assignment{a}); err != nil {
				t.Fatal(err)
			}
			waitState(t, d, a, api.JobRunning, 2*time.Minute)
			waitLines(t, "stdout.log", func() string { return logOf(dataDir, a.ID, stdoutLog) }, "running", "stopping", "running")
			waitLines(t, "the follower", followed, "running", "stopping", "running")
		})
	}
}

// follow reads id's stdout with follow=true in the background; what it
// returns says what arrived so far.
func follow(t *testing.T, srv *httptest.Server, id string) func() string {
	t.Helper()
	resp := getLogs(t, t.Context(), srv, id, "reader", url.Values{"follow": {"true"}})
	var mu sync.Mutex
	var got strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			mu.Lock()
			got.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = resp.Body.Close()
		<-done
	})
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return got.String()
	}
}

// waitLines waits for the lines of what ending in "running" or
// "stopping" (a compose stack's carry its service's prefix) to be want,
// in order, each once.
func waitLines(t *testing.T, what string, text func() string, want ...string) {
	t.Helper()
	poll.Eventually(t, time.Minute, what+" saying "+strings.Join(want, ", "), func() error {
		var got []string
		for _, line := range strings.Split(text(), "\n") {
			for _, w := range []string{"running", "stopping"} {
				if strings.HasSuffix(line, w) {
					got = append(got, w)
				}
			}
		}
		return poll.Check(slices.Equal(got, want), "%s says %v:\n%s", what, got, text())
	})
}

// TestRuntimeMoveAtTheLastStopKeepsBatchOutput: an assignment desired
// stopped whose launch names another runtime meanwhile is at its last stop
// in the driver that ran it: a batch job's output goes to the retain
// store, as any last stop's does, not away with its directory.
func TestRuntimeMoveAtTheLastStopKeepsBatchOutput(t *testing.T) {
	d := newDispatcher(t, "w1", t.TempDir(), nil, api.RuntimeExec)
	a := assignment("w1", "b1", "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", "echo done"}}, api.RuntimeExec)
	a.RunOnce = true
	waitState(t, d, a, api.JobExited, 30*time.Second)
	a.Desired, a.Runtime = api.DesiredStop, runtimeNone
	if state, msg := d.Ensure(t.Context(), a); state != api.JobStopped {
		t.Fatalf("stop: %s (%s)", state, msg)
	}
	if status, body := readAll(t, getLogs(t, t.Context(), logServer(t, d), a.ID, "reader", nil)); status != 200 || body != "done\n" {
		t.Fatalf("the output after the last stop: %d %q", status, body)
	}
}

// TestWasmRedeployKeepsLogs: a module that the wasm driver runs again
// itself, for a change of launch, role or epoch within one generation,
// appends to the same log as the run before it. The driver used to stop
// it with Stop, which removed its directory.
func TestWasmRedeployKeepsLogs(t *testing.T) {
	src, dataDir := &fakeTemplates{}, t.TempDir()
	ref := src.add("mod", tarball(t, map[string][]byte{"main.wasm": testModule(t)}))
	d := newDispatcher(t, "w1", dataDir, src, api.RuntimeWasm)
	a := assignment("w1", "b1", "mod", wasmLaunch(ref, nil), api.RuntimeWasm)
	waitState(t, d, a, api.JobRunning, time.Minute)
	waitLog(t, dataDir, a.ID, stdoutLog, envLine("AMSERVER_ROLE", api.RolePrimary))
	a.Role, a.Epoch = api.RoleBackup, 2
	waitState(t, d, a, api.JobRunning, time.Minute)
	waitLog(t, dataDir, a.ID, stdoutLog, envLine("AMSERVER_ROLE", api.RolePrimary), envLine("AMSERVER_ROLE", api.RoleBackup))
}
