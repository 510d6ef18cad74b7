package worker

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
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
