package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
	"github.com/amserver/amserver/worker"
)

// TestAssignmentLogsThroughServer: a real exec job's output reaches a
// client through a server, which proxies to the job's worker; a follower
// gets lines written after its request; ACLs hold on the server and on the
// worker itself, which serves only the assignments it runs.
func TestAssignmentLogsThroughServer(t *testing.T) {
	const workerSecret = "worker-1-secret-for-log-tests"
	tc := testcluster.New(t, 1, testcluster.TCP(), testcluster.Graceful(), testcluster.Configure(func(_ int, c *agent.Config) {
		c.ACL = agent.ACLConfig{Enabled: true, Tokens: []agent.ConfigToken{
			{Secret: testMgmtSecret, Kind: fsm.ACLManagement},
			{Secret: workerSecret, Kind: fsm.ACLWorker, NodeID: "worker-1"},
		}}
	}))
	srv := tc.Servers()[0]
	mgmt := tokenClient(tc, srv, testMgmtSecret)
	ctx := ctxTimeout(t, 90*time.Second)
	poll.Eventually(t, 10*time.Second, "the configured management token to work", func() error {
		_, err := mgmt.ACLTokenSelf(ctx)
		return err
	})
	ws := tc.StartWorkers(1, func(wc *worker.Config) {
		wc.Token = workerSecret
		drv, err := worker.NewDispatcher(ctx, worker.RuntimeConfig{NodeID: wc.NodeID, DataDir: t.TempDir(), Runtimes: []string{api.RuntimeExec}})
		if err != nil {
			t.Fatal(err)
		}
		wc.Driver = drv
	})
	waitReadyNodes(t, mgmt, 1)

	gate := filepath.Join(t.TempDir(), "go")
	script := `for i in 1 2 3; do echo "line $i"; done; echo "to stderr" >&2
while [ ! -f ` + gate + ` ]; do sleep 0.05; done; echo "after the gate"; exec sleep 600`
	spec := oneJob("printer", 1)
	spec.Jobs[0].Launch = api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", script}}
	if _, err := mgmt.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	b := bundleIs(t, ctx, mgmt, 30*time.Second, "printer", "placed and running", allRunning)
	id := b.Replicas[0].Jobs[0].AssignmentID
	read, err := mgmt.CreateACLToken(ctx, api.ACLTokenRequest{Kind: api.ACLRead})
	if err != nil {
		t.Fatal(err)
	}
	reader := tokenClient(tc, srv, read.SecretID)

	poll.Eventually(t, 20*time.Second, "the job's output through the server", func() error {
		got, err := logText(ctx, reader, id, api.LogOptions{Tail: api.TailAll})
		return poll.Check(err == nil && got == "line 1\nline 2\nline 3\n", "%q, %v", got, err)
	})
	if got, err := logText(ctx, reader, id, api.LogOptions{Tail: 1}); err != nil || got != "line 3\n" {
		t.Fatalf("tail 1: %q, %v", got, err)
	}
	if got, err := logText(ctx, reader, id, api.LogOptions{Tail: api.TailAll, Stream: api.LogStderr}); err != nil || got != "to stderr\n" {
		t.Fatalf("stderr: %q, %v", got, err)
	}
	for name, c := range map[string]*api.Client{"anonymous": tokenClient(tc, srv, ""), "worker token": tokenClient(tc, srv, workerSecret)} {
		if _, err := logText(ctx, c, id, api.LogOptions{Tail: api.TailAll}); apiStatus(err) != http.StatusUnauthorized && apiStatus(err) != http.StatusForbidden {
			t.Fatalf("%s: %v, want 401 or 403", name, err)
		}
	}
	followAfterGate(t, ctx, reader, id, gate)
	checkWorkerDirect(t, ctx, ws[0], id, read.SecretID)
}

func logText(ctx context.Context, c *api.Client, id string, o api.LogOptions) (string, error) {
	body, err := c.AssignmentLogs(ctx, id, o)
	if err != nil {
		return "", err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return string(b), err
}

// followAfterGate: a follower with tail 1 gets the last line, then the line
// the job writes once the gate file appears, which it did not hold when
// the request was made.
func followAfterGate(t *testing.T, ctx context.Context, c *api.Client, id, gate string) {
	t.Helper()
	body, err := c.AssignmentLogs(ctx, id, api.LogOptions{Follow: true, Tail: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	lines := bufio.NewReader(body)
	if l, err := lines.ReadString('\n'); err != nil || l != "line 3\n" {
		t.Fatalf("follow, first line %q, %v", l, err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := lines.ReadString('\n'); err != nil || l != "after the gate\n" {
		t.Fatalf("follow, line written after the request: %q, %v", l, err)
	}
}

// checkWorkerDirect: the worker's own endpoint asks a server about the
// token, and answers only for assignments it runs.
func checkWorkerDirect(t *testing.T, ctx context.Context, w *worker.Worker, id, readSecret string) {
	t.Helper()
	if !strings.HasPrefix(w.HTTPURL(), "http://127.0.0.1:") {
		t.Fatalf("worker log address %q", w.HTTPURL())
	}
	cases := []struct {
		name, token, id string
		status          int
	}{
		{"reader", readSecret, id, http.StatusOK},
		{"no token", "", id, http.StatusUnauthorized},
		{"not run here", readSecret, "other:0:j@worker-1", http.StatusNotFound},
	}
	for _, tc := range cases {
		c, err := api.New(w.HTTPURL(), api.WithToken(tc.token), api.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		_, err = logText(ctx, c, tc.id, api.LogOptions{Tail: 1})
		if got := apiStatus(err); (tc.status == http.StatusOK && err != nil) || (tc.status != http.StatusOK && got != tc.status) {
			t.Fatalf("%s: %v, want %d", tc.name, err, tc.status)
		}
	}
}

// TestFinishedBatchOutputThroughServer: a real exec batch job runs to its
// end; once its bundle is complete (the job no longer placed, its
// assignment gone), the bundle still names the assignment and its output
// is read through a server from the worker, which kept it.
func TestFinishedBatchOutputThroughServer(t *testing.T) {
	ctx := ctxTimeout(t, 90*time.Second)
	c := execWorkerCluster(t, ctx)
	spec := oneJob("report", 1)
	spec.Kind = api.KindBatch
	spec.Jobs[0].Launch = api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", `echo "rows: 42"; echo "done" >&2`}}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	b := bundleIs(t, ctx, c, 30*time.Second, "report", "complete", func(b *api.Bundle) bool { return b.State == api.StateComplete })
	id := b.Replicas[0].Jobs[0].AssignmentID
	if id == "" || b.Replicas[0].Jobs[0].NodeID != "" {
		t.Fatalf("finished job %+v: want no node and its assignment named", b.Replicas[0].Jobs[0])
	}
	poll.Eventually(t, 20*time.Second, "the assignment gone once the worker stopped it", func() error {
		list, _, err := c.Assignments(ctx, "worker-1", nil)
		return poll.Check(err == nil && len(list) == 0, "%d assignments, %v", len(list), err)
	})
	if got, err := logText(ctx, c, id, api.LogOptions{Tail: api.TailAll}); err != nil || got != "rows: 42\n" {
		t.Fatalf("the finished job's stdout: %q, %v", got, err)
	}
	if got, err := logText(ctx, c, id, api.LogOptions{Tail: api.TailAll, Stream: api.LogStderr, Follow: true}); err != nil || got != "done\n" {
		t.Fatalf("the finished job's stderr, followed (ends at once): %q, %v", got, err)
	}
}

// execWorkerCluster is a one-server cluster with one worker that runs exec
// jobs for real; it returns a client of the server.
func execWorkerCluster(t *testing.T, ctx context.Context) *api.Client {
	t.Helper()
	tc := testcluster.New(t, 1, testcluster.TCP(), testcluster.Graceful())
	tc.StartWorkers(1, func(wc *worker.Config) {
		drv, err := worker.NewDispatcher(ctx, worker.RuntimeConfig{NodeID: wc.NodeID, DataDir: t.TempDir(), Runtimes: []string{api.RuntimeExec}})
		if err != nil {
			t.Fatal(err)
		}
		wc.Driver = drv
	})
	c := tc.Client(tc.Servers()[0])
	waitReadyNodes(t, c, 1)
	return c
}

// TestRestartedBatchOutputThroughServer: a batch job that fails and is
// restarted by its bundle's policy (a new generation each time) keeps
// every attempt's output, before and after its bundle ends. The worker
// used to remove the job's directory at each restart: only the last
// attempt's line was left.
func TestRestartedBatchOutputThroughServer(t *testing.T) {
	ctx := ctxTimeout(t, 90*time.Second)
	c := execWorkerCluster(t, ctx)
	spec := oneJob("bt", 1)
	spec.Kind = api.KindBatch
	spec.Restart = &api.RestartPolicy{Attempts: 2, Delay: "1s"}
	spec.Jobs[0].Launch = api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", `echo "attempt"; exit 4`}}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	b := bundleIs(t, ctx, c, 45*time.Second, "bt", "failed after its attempts", func(b *api.Bundle) bool { return b.State == api.StateFailed })
	j := b.Replicas[0].Jobs[0]
	if j.Attempts != 2 || j.AssignmentID == "" {
		t.Fatalf("failed job %+v: want 2 restarts and its assignment named", j)
	}
	const want = "attempt\nattempt\nattempt\n"
	poll.Eventually(t, 20*time.Second, "every attempt's output, kept once the bundle ended", func() error {
		list, _, err := c.Assignments(ctx, "worker-1", nil)
		if err != nil || len(list) != 0 {
			return fmt.Errorf("%d assignments left (%w)", len(list), err)
		}
		got, err := logText(ctx, c, j.AssignmentID, api.LogOptions{Tail: api.TailAll})
		return poll.Check(err == nil && got == want, "stdout %q (%v), want %q", got, err, want)
	})
}
