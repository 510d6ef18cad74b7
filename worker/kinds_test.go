package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// TestExecDriverRunOnce: a batch job runs once: its exit is reported as
// exited with the process's exit code (128+signal when a signal ended it,
// 127 when it could not start), and the driver does not restart it.
func TestExecDriverRunOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		code    int
		msg     string // what the exit's message holds
	}{
		{"success", []string{"sh", "-c", "echo fine >&2; exit 0"}, 0, "sh exited with code 0"},
		{"exit 3", []string{"sh", "-c", "echo no licence >&2; exit 3"}, 3, "sh exited with code 3: no licence"},
		{"killed", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15, "sh exited with code 143"},
		{"cannot start", []string{"/nonexistent/amserver-test"}, startFailed, "start: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewExecDriver(filepath.Join(t.TempDir(), "tasks"), nil)
			if err != nil {
				t.Fatal(err)
			}
			d.stopGrace = time.Second
			a := api.Assignment{ID: "b:0:j@w1", BundleID: "b", Job: "j", NodeID: "w1", Desired: api.DesiredRun, RunOnce: true,
				Launch: api.Launch{Kind: "legacy", Job: &api.LegacyJob{Driver: "exec", Command: tc.command}}}
			ctx := context.Background()
			d.Ensure(ctx, a)
			var ev TaskEvent
			for ev.State != api.JobExited {
				if ev = nextEvent(t, d); ev.State == api.JobFailed {
					t.Fatalf("a batch job reported failed: %+v", ev)
				}
			}
			if ev.ExitCode != tc.code || !strings.Contains(ev.Message, tc.msg) || (tc.code == 0 && ev.Message != tc.msg) {
				t.Fatalf("exit event %+v, want code %d and a message with %q", ev, tc.code, tc.msg)
			}
			if state, _ := d.Ensure(ctx, a); state != api.JobExited {
				t.Fatalf("after its exit Ensure says %s", state)
			}
			if code, ok := d.ExitCode(a.ID); !ok || code != tc.code {
				t.Fatalf("ExitCode %d %v", code, ok)
			}
			select {
			case ev := <-d.Events():
				t.Fatalf("the job did something after its exit: %+v", ev)
			default:
			}
			if err := d.Stop(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if _, ok := d.ExitCode(a.ID); ok || len(d.Running()) != 0 {
				t.Fatal("the task outlived its stop")
			}
		})
	}
}

// recordingDriver records the calls the worker makes, in order.
type recordingDriver struct {
	*NoneDriver
	mu    sync.Mutex
	calls []string
	last  api.Launch
}

func (r *recordingDriver) Ensure(ctx context.Context, a api.Assignment) (string, string) {
	r.mu.Lock()
	r.calls = append(r.calls, "ensure")
	r.last = a.Launch
	r.mu.Unlock()
	return r.NoneDriver.Ensure(ctx, a)
}

func (r *recordingDriver) Stop(ctx context.Context, id string) error {
	r.mu.Lock()
	r.calls = append(r.calls, "stop")
	r.mu.Unlock()
	return r.NoneDriver.Stop(ctx, id)
}

// TestWorkerRestartsOnNewGeneration: the same generation again only
// ensures; a new generation stops the job, then ensures it with the new
// launch.
func TestWorkerRestartsOnNewGeneration(t *testing.T) {
	drv := &recordingDriver{NoneDriver: NewNoneDriver()}
	w := &Worker{cfg: Config{NodeID: "w1", Driver: drv}, logger: slog.New(slog.DiscardHandler)}
	ctx := t.Context()
	launch := func(v string) api.Launch {
		return api.Launch{Kind: "legacy", Job: &api.LegacyJob{Driver: "none", Env: map[string]string{"V": v}}}
	}
	a := api.Assignment{ID: "b:0:j@w1", Desired: api.DesiredRun, Status: api.JobRunning, Launch: launch("1")}
	for _, step := range []struct {
		gen   uint64
		v     string
		calls []string
	}{
		{0, "1", []string{"ensure"}},
		{0, "1", []string{"ensure"}},
		{1, "2", []string{"stop", "ensure"}},
		{1, "2", []string{"ensure"}},
		{3, "3", []string{"stop", "ensure"}},
	} {
		a.Generation, a.Launch = step.gen, launch(step.v)
		drv.calls = nil
		if err := w.reconcile(ctx, nil, []api.Assignment{a}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(drv.calls, step.calls) || !reflect.DeepEqual(drv.last, a.Launch) {
			t.Fatalf("generation %d: calls %v with launch %+v, want %v with %+v", step.gen, drv.calls, drv.last, step.calls, a.Launch)
		}
	}
	if err := w.reconcile(ctx, nil, nil); err != nil || len(w.gens) != 0 {
		t.Fatalf("generations of unlisted assignments kept: %v (%v)", w.gens, err)
	}
}

// TestWorkerReportsExitCode: an exited batch job is reported with its
// exit code, once.
func TestWorkerReportsExitCode(t *testing.T) {
	var mu sync.Mutex
	var got []api.AssignmentStatus
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var s api.AssignmentStatus
		_ = json.NewDecoder(r.Body).Decode(&s)
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c, err := api.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{cfg: Config{NodeID: "w1", Driver: NewNoneDriver()}, logger: slog.New(slog.DiscardHandler)}
	a := api.Assignment{ID: "b:0:j@w1", Desired: api.DesiredRun, RunOnce: true, Status: api.JobAssigned}
	if err := w.reconcile(t.Context(), c, []api.Assignment{a}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	a.Status, a.Message, a.ExitCode = api.JobExited, "simulated: exited 0", &zero
	if err := w.reconcile(t.Context(), c, []api.Assignment{a}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 5*time.Second, "one report", func() error {
		mu.Lock()
		defer mu.Unlock()
		return poll.Check(len(got) == 1 && got[0].State == api.JobExited && got[0].ExitCode != nil && *got[0].ExitCode == 0,
			"reports %+v", got)
	})
}

// TestJudgeOnce: a batch job's containers read running while any runs,
// exited once all have, with the first non-zero exit code (a compose
// stack's services), else 0.
func TestJudgeOnce(t *testing.T) {
	row := func(state, status string) psRow { return psRow{State: state, Status: status} }
	for _, tc := range []struct {
		name  string
		rows  []psRow
		state string
		code  int
	}{
		{"one running", []psRow{row("exited", "Exited (0) 1 second ago"), row("running", "Up 3 seconds")}, api.JobRunning, 0},
		{"all exited 0", []psRow{row("exited", "Exited (0) 1 second ago"), row("exited", "Exited (0) 2 seconds ago")}, api.JobExited, 0},
		{"one service failed", []psRow{row("exited", "Exited (0) 1 second ago"), row("exited", "Exited (3) 1 second ago"), row("exited", "Exited (9) 1 second ago")}, api.JobExited, 3},
		{"being created", []psRow{row("created", "Created")}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(&ctask{a: api.Assignment{RunOnce: true}}, tc.rows, false)
			if v.state != tc.state || v.code != tc.code {
				t.Fatalf("verdict %s code %d, want %s %d", v.state, v.code, tc.state, tc.code)
			}
		})
	}
}

// TestDockerRunOnce: a batch docker job's container exit is reported as
// exited with its code.
func TestDockerRunOnce(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	node := testNode()
	t.Cleanup(func() { sweepNode(t, node) })
	d := newDispatcher(t, node, t.TempDir(), nil, api.RuntimeDocker)
	a := assignment(node, "b1", "enc", dockerLaunch(testImage(t), map[string]string{"WORKLOAD_EXIT": "6"}), api.RuntimeDocker)
	a.RunOnce = true
	if msg := waitState(t, d, a, api.JobExited, time.Minute); !strings.Contains(msg, "code 6") {
		t.Fatalf("exit message %q", msg)
	}
	if code, ok := d.ExitCode(a.ID); !ok || code != 6 {
		t.Fatalf("exit code %d %v", code, ok)
	}
	srv := logServer(t, d)
	stderr := func() string {
		_, body := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"stream": {"stderr"}}))
		return body
	}
	poll.Eventually(t, 30*time.Second, "the container's output copied", func() error {
		return poll.Check(stderr() == "exiting with code 6\n", "stderr %q", stderr())
	})
	// Its last stop keeps the output (retainStore).
	a.Desired = api.DesiredStop
	waitState(t, d, a, api.JobStopped, time.Minute)
	if got := stderr(); got != "exiting with code 6\n" {
		t.Fatalf("stderr after the stop: %q", got)
	}
}

// TestComposeRunOnce: a batch compose job is exited once every service
// has, with the first non-zero service exit code.
func TestComposeRunOnce(t *testing.T) {
	t.Parallel()
	requireCompose(t)
	node, src := testNode(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	ref := src.add("batch", tarball(t, map[string][]byte{"compose.yaml": []byte(`services:
  done:
    image: ${IMAGE}
    environment:
      WORKLOAD_EXIT: "0"
  broken:
    image: ${IMAGE}
    environment:
      WORKLOAD_EXIT: "7"
      WORKLOAD_AFTER: 1s
`)}))
	d := newDispatcher(t, node, t.TempDir(), src, api.RuntimeCompose)
	a := assignment(node, "b1", "etl", composeLaunch(ref, map[string]string{"IMAGE": testImage(t)}), api.RuntimeCompose)
	a.RunOnce = true
	waitState(t, d, a, api.JobExited, 2*time.Minute)
	if code, ok := d.ExitCode(a.ID); !ok || code != 7 {
		t.Fatalf("exit code %d %v, want 7", code, ok)
	}
	if err := d.Stop(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
}
