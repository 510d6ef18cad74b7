package worker

import (
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// TestWorkerSweepsWhatACrashLeft: the task directories an earlier run of
// the worker left (it was killed: nothing stopped its exec and wasm
// tasks) go at the next reconcile unless a task holds them or an
// assignment still runs here; a batch job whose bundle ended meanwhile
// keeps its output where the log endpoint serves finished jobs.
func TestWorkerSweepsWhatACrashLeft(t *testing.T) {
	dataDir := t.TempDir()
	root := filepath.Join(dataDir, "assignments")
	d := newDispatcher(t, "w1", dataDir, nil, api.RuntimeExec)
	w := &Worker{cfg: Config{NodeID: "w1", Driver: d}, logger: slog.New(slog.DiscardHandler)}
	exec := func(b string, runOnce bool, desired, status string) api.Assignment {
		a := assignment("w1", b, "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", "echo again"}}, api.RuntimeExec)
		a.RunOnce, a.Desired, a.Status = runOnce, desired, status
		return a
	}
	held := assignment("w1", "held", "job", api.Launch{Driver: api.DriverExec, Command: []string{"sleep", "600"}}, api.RuntimeExec)
	held.Status = api.JobRunning
	held.Message = waitState(t, d, held, api.JobRunning, 30*time.Second)

	cases := []struct {
		name   string
		a      api.Assignment
		listed bool
		kept   bool // the directory stays
		served bool // the retain store serves its output
	}{
		{"no longer assigned here", exec("gone", false, api.DesiredRun, api.JobRunning), false, false, false},
		{"batch job that ended while the worker was down", exec("ended", true, api.DesiredStop, api.JobStopped), true, false, true},
		{"service stopped while the worker was down", exec("stopped", false, api.DesiredStop, api.JobStopped), true, false, false},
		{"batch job that exited, its bundle still running", exec("exited", true, api.DesiredRun, api.JobExited), true, true, false},
	}
	list := []api.Assignment{held}
	for _, tc := range cases {
		taskFiles(t, root, tc.a.ID, "output of "+tc.a.ID+"\n", "")
		if tc.listed {
			list = append(list, tc.a)
		}
	}
	stray := filepath.Join(root, "lost+found")
	if err := os.MkdirAll(stray, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := w.reconcile(t.Context(), nil, list); err != nil {
		t.Fatal(err)
	}

	for _, tc := range cases {
		_, err := os.Stat(taskDir(root, tc.a.ID))
		if kept := err == nil; kept != tc.kept {
			t.Errorf("%s: directory kept %v, want %v (%v)", tc.name, kept, tc.kept, err)
		}
		out, ok := served(d.retain, tc.a.ID, stdoutLog)
		if ok != tc.served || (ok && out != "output of "+tc.a.ID+"\n") {
			t.Errorf("%s: retained %v %q, want %v", tc.name, ok, out, tc.served)
		}
	}
	if got := d.Running(); !reflect.DeepEqual(got, []string{held.ID}) {
		t.Errorf("tasks held after the reconcile: %v, want only %s (the exited batch job ran again?)", got, held.ID)
	}
	for _, dir := range []string{taskDir(root, held.ID), stray} {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was removed", dir)
		}
	}
}

// TestWorkerDoesNotRerunAFinishedBatchJob: a batch job the servers know
// exited (this generation) is not started again by a worker that no
// longer holds it; one it holds is ensured as before, and a restart (a
// new generation, status reset) runs it.
func TestWorkerDoesNotRerunAFinishedBatchJob(t *testing.T) {
	drv := &recordingDriver{NoneDriver: NewNoneDriver()}
	w := &Worker{cfg: Config{NodeID: "w1", Driver: drv}, logger: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	c, err := api.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a := api.Assignment{ID: "b:0:j@w1", Desired: api.DesiredRun, RunOnce: true}
	zero := 0
	for _, step := range []struct {
		name   string
		gen    uint64
		status string
		calls  []string
	}{
		{"exited, not held (the worker restarted)", 0, api.JobExited, nil},
		{"restarted by the servers", 1, api.JobAssigned, []string{"ensure"}},
		{"exited, held", 1, api.JobExited, []string{"ensure"}},
	} {
		a.Generation, a.Status, a.ExitCode = step.gen, step.status, nil
		if step.status == api.JobExited {
			a.Message, a.ExitCode = "simulated: exited 0", &zero
		}
		drv.calls = nil
		if err := w.reconcile(t.Context(), c, []api.Assignment{a}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(drv.calls, step.calls) {
			t.Fatalf("%s: calls %v, want %v", step.name, drv.calls, step.calls)
		}
	}
}
