package worker

import (
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

func wasmLaunch(ref string, params map[string]string) api.Launch {
	return api.Launch{Kind: api.LaunchProductTemplate, Ref: ref, Parameters: params,
		Tags: map[string]string{"team": "live", "__stopDateTime": "2030-01-01T00:00:00Z"}}
}

// TestWasmDriver: main.wasm runs in-process with the launch's variables;
// its exit code is reported, a stop cancels it, a module that ends is
// run again (checkWasmRestarts), a module that allocates
// beyond the memory limit fails, and a job's memoryLimitMiB replaces the
// driver's default.
func TestWasmDriver(t *testing.T) {
	t.Parallel() // each its own node, data and containers; mostly waiting on Docker
	src := &fakeTemplates{}
	ref := src.add("mod", tarball(t, map[string][]byte{"main.wasm": testModule(t), "conf/a.txt": []byte("x")}))
	dataDir := t.TempDir()
	d, err := NewDispatcher(context.Background(), RuntimeConfig{
		NodeID: "w1", DataDir: dataDir, Runtimes: []string{api.RuntimeWasm}, Templates: src, WasmMemoryMiB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.StopAll(context.Background()) })
	d.drivers[api.RuntimeWasm].(*WasmDriver).stableAfter = 200 * time.Millisecond // checkWasmRestarts

	t.Run("env and stop", func(t *testing.T) {
		a := assignment("w1", "b1", "mod", wasmLaunch(ref, map[string]string{"GREETING": "a $b\nc"}), api.RuntimeWasm)
		waitState(t, d, a, api.JobRunning, time.Minute)
		waitLog(t, dataDir, a.ID, stdoutLog, envLine("GREETING", "a $b\nc"), envLine("AMSERVER_ROLE", "primary"),
			envLine("AMSERVER_TAG_TEAM", "live"), envLine("AMSERVER_STOP_DATETIME", "2030-01-01T00:00:00Z"), "running")
		a.Desired = api.DesiredStop
		start := time.Now()
		if state, _ := d.Ensure(context.Background(), a); state != api.JobStopped {
			t.Fatalf("stop: %s", state)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("stopping took %s: the module ignored cancellation", took)
		}
		if len(d.Running()) != 0 {
			t.Fatalf("still running: %v", d.Running())
		}
	})

	t.Run("exit code", func(t *testing.T) {
		params := map[string]string{"WORKLOAD_EXIT": "5", "WORKLOAD_STDERR": "about to fail"}
		a := assignment("w1", "b2", "mod", wasmLaunch(ref, params), api.RuntimeWasm)
		msg := waitState(t, d, a, api.JobFailed, time.Minute)
		if !strings.Contains(msg, "exited with code 5") || !strings.Contains(msg, "about to fail") {
			t.Fatalf("failure message %q", msg)
		}
		// A service's module that ends cleanly is not done either: it is
		// run again, and reads failed meanwhile.
		a.Launch.Parameters = map[string]string{"WORKLOAD_EXIT": "0"}
		poll.Eventually(t, time.Minute, "the clean exit reported", func() error {
			state, msg := d.Ensure(context.Background(), a)
			return poll.Check(state == api.JobFailed && msg == "main.wasm exited with code 0", "%s %q", state, msg)
		})
		_ = d.Stop(context.Background(), a.ID) // no restarts while the other cases run
	})

	t.Run("logs served", func(t *testing.T) { checkWasmLogs(t, d, ref) })
	t.Run("a module that ends is restarted", func(t *testing.T) { checkWasmRestarts(t, d, dataDir, ref) })

	t.Run("batch exit code", func(t *testing.T) {
		a := assignment("w1", "b5", "mod", wasmLaunch(ref, map[string]string{"WORKLOAD_EXIT": "5", "WORKLOAD_STDERR": "no input"}), api.RuntimeWasm)
		a.RunOnce = true
		if msg := waitState(t, d, a, api.JobExited, time.Minute); !strings.Contains(msg, "main.wasm exited with code 5: ") || !strings.Contains(msg, "no input") {
			t.Fatalf("exit message %q", msg)
		}
		if code, ok := d.ExitCode(a.ID); !ok || code != 5 {
			t.Fatalf("exit code %d %v, want 5", code, ok)
		}
		a.Desired = api.DesiredStop
		d.Ensure(context.Background(), a)
		// Its output outlives the stop (retainStore), a finished log.
		srv := logServer(t, d)
		status, out := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"follow": {"true"}}))
		if status != 200 || !strings.Contains(out, envLine("AMSERVER_ROLE", "primary")) {
			t.Fatalf("a stopped batch module's stdout: %d %q", status, out)
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		a := assignment("w1", "b3", "mod", wasmLaunch(ref, map[string]string{"WORKLOAD_ALLOC_MIB": "128"}), api.RuntimeWasm)
		msg := waitState(t, d, a, api.JobFailed, time.Minute)
		if strings.Contains(logOf(dataDir, a.ID, stdoutLog), "allocated") {
			t.Fatalf("the module allocated 128 MiB under a 64 MiB limit: %s", msg)
		}
		if !strings.Contains(logOf(dataDir, a.ID, stderrLog), "out of memory") {
			t.Fatalf("the module failed, but not for lack of memory: %s", msg)
		}
		_ = d.Stop(context.Background(), a.ID)
	})

	t.Run("the job's memory limit replaces the default", func(t *testing.T) {
		// 80 MiB: more than the default allows, and no more, as the
		// module's memory growth is slow under the race detector (it
		// took 28 s of CPU for 128 MiB, then more than the wait on a
		// loaded CI host).
		a := assignment("w1", "b5", "mod", wasmLaunch(ref, map[string]string{"WORKLOAD_ALLOC_MIB": "80"}), api.RuntimeWasm)
		a.MemoryLimitMiB = 256
		waitState(t, d, a, api.JobRunning, time.Minute)
		waitLog(t, dataDir, a.ID, stdoutLog, "allocated 80 MiB", "running")
		a.Desired = api.DesiredStop
		if state, _ := d.Ensure(context.Background(), a); state != api.JobStopped {
			t.Fatalf("stop: %s", state)
		}
	})

	t.Run("a failed fetch is retried", func(t *testing.T) {
		flaky := &flakySource{fakeTemplates: src}
		d2, err := NewDispatcher(context.Background(), RuntimeConfig{
			NodeID: "w2", DataDir: t.TempDir(), Runtimes: []string{api.RuntimeWasm}, Templates: flaky,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d2.StopAll(context.Background()) })
		a := assignment("w2", "b4", "mod", wasmLaunch(ref, nil), api.RuntimeWasm)
		if msg := waitState(t, d2, a, api.JobFailed, time.Minute); !strings.Contains(msg, "server unreachable") {
			t.Fatalf("first attempt: %q", msg)
		}
		waitState(t, d2, a, api.JobRunning, time.Minute)
	})

	if n := src.fetches.Load(); n != 2 {
		t.Fatalf("the archive was fetched %d times, want once per data directory", n)
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "wasm-cache"))
	if len(entries) == 0 {
		t.Fatal("no compiled module was cached")
	}
	poll.Eventually(t, 10*time.Second, "every module stopped", func() error {
		_ = d.StopAll(context.Background())
		return poll.Check(len(d.Running()) == 0, "running %v", d.Running())
	})
}

// flakySource fails its first fetch, as a server out of reach would.
type flakySource struct {
	*fakeTemplates
	failed atomic.Bool
}

func (f *flakySource) TemplateArchive(ctx context.Context, name, digest string) (io.ReadCloser, error) {
	if !f.failed.Swap(true) {
		return nil, errors.New("server unreachable")
	}
	return f.fakeTemplates.TemplateArchive(ctx, name, digest)
}

// TestWasmMemoryPages: a job's limit, else the larger of the driver's
// default and the job's request, in 64 KiB pages, capped at wasm32's 4 GiB.
func TestWasmMemoryPages(t *testing.T) {
	d := &WasmDriver{memoryMiB: 64}
	for _, tc := range []struct {
		request, limit int64
		want           uint32
	}{{0, 0, 1024}, {32, 0, 1024}, {128, 0, 2048}, {0, 1, 16}, {512, 256, 4096}, {0, 4096, 65536}, {0, 1 << 30, 65536}, {1 << 30, 0, 65536}} {
		if got := d.memoryPages(api.Assignment{MemoryMiB: tc.request, MemoryLimitMiB: tc.limit}); got != tc.want {
			t.Errorf("request %d, limit %d MiB: %d pages, want %d", tc.request, tc.limit, got, tc.want)
		}
	}
}

// checkWasmRestarts: a service's module that exits non-zero is run again
// after the backoff; the restarted run reads failed until it has stayed up
// (stableAfter, short in TestWasmDriver), then running; a stop while a
// restart is pending ends the task for good. The driver used to leave the
// module failed until its launch changed. TestWasmDriver runs it with its
// dispatcher, whose compiled module is cached.
func checkWasmRestarts(t *testing.T, d *Dispatcher, dataDir, ref string) {
	params := map[string]string{"WORKLOAD_EXIT": "3", "WORKLOAD_AFTER": "2s", "WORKLOAD_STDERR": "crashing"}
	a := assignment("w1", "b6", "mod", wasmLaunch(ref, params), api.RuntimeWasm)
	d.Ensure(t.Context(), a)
	want := []string{api.JobRunning, api.JobFailed, api.JobRunning, api.JobFailed}
	if states := collectStates(t, d, a.ID, len(want), 2*time.Minute); !slices.Equal(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	if runs := strings.Count(logOf(dataDir, a.ID, stderrLog), "exiting with code 3"); runs < 2 {
		t.Fatalf("the module ran %d times, want 2 or more", runs)
	}
	// The second restart waits 2 s: the stop comes while it is pending.
	a.Desired = api.DesiredStop
	if state, _ := d.Ensure(t.Context(), a); state != api.JobStopped {
		t.Fatalf("stop: %s", state)
	}
	if slices.Contains(d.Running(), a.ID) {
		t.Fatalf("still running: %v", d.Running())
	}
	if _, err := os.Stat(filepath.Join(dataDir, "assignments", taskName(a.ID))); !os.IsNotExist(err) {
		t.Fatalf("the task's directory is back (a run after the stop?): %v", err)
	}
}
