package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// stackFiles is a two-service compose template around the test image:
// web reads the whole .env, side only what its environment names; both
// get the identity from amserver's override.
func stackFiles(t *testing.T, extra string) map[string][]byte {
	compose := `services:
  web:
    image: ${IMAGE}
    env_file: .env
  side:
    image: ${IMAGE}
    environment:
      FROM_PARAM: ${GREETING}
      WORKLOAD_STDERR: side says hi
` + extra
	return map[string][]byte{"compose.yaml": []byte(compose), "README": []byte("test stack\n")}
}

func composeLaunch(ref string, params map[string]string) api.Launch {
	return api.Launch{Kind: api.LaunchProductTemplate, Ref: ref, Parameters: params,
		Tags: map[string]string{"team": "live", "on-call.pager": "x1", "__internal": "no", "__stopDateTime": "2030-01-01T00:00:00Z"}}
}

// containersOf lists the containers labelled with an assignment.
func containersOf(t *testing.T, id string) []psRow {
	t.Helper()
	cli, err := newDockerCLI()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := cli.ps(context.Background(), "label="+labelAssignment+"="+id)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func inspectLabels(t *testing.T, id string) map[string]string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", "{{json .Config.Labels}}", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	var labels map[string]string
	if err := json.Unmarshal(out, &labels); err != nil {
		t.Fatal(err)
	}
	return labels
}

// TestComposeLifecycle: a stack comes up labelled, with the launch's
// parameters, tags and identity inside its containers; a promotion
// redeploys it with the new role; a stop takes it down entirely.
func TestComposeLifecycle(t *testing.T) {
	t.Parallel() // each its own node, data and containers; mostly waiting on Docker
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	ref := src.add("web", tarball(t, stackFiles(t, "")))
	d := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	params := map[string]string{
		"IMAGE": testImage(t), "GREETING": "hello $USER # not a comment", "MULTI": "line1\nline2",
		"QUOTED": `it's "quoted"`, "EMPTY": "",
	}
	a := assignment(node, "b1", "web", composeLaunch(ref, params), api.RuntimeCompose)
	a.Role = api.RoleBackup
	waitState(t, d, a, api.JobRunning, 2*time.Minute)

	rows := containersOf(t, a.ID)
	if len(rows) != 2 {
		t.Fatalf("want 2 containers, got %+v", rows)
	}
	for _, r := range rows {
		l := inspectLabels(t, r.ID)
		if l[labelBundle] != "b1" || l[labelJob] != "web" || l[labelAssignment] != a.ID || l[labelNode] != node ||
			l[labelProject] != taskName(a.ID) {
			t.Fatalf("labels of %s: %v", r.Names, l)
		}
	}
	waitLog(t, dataDir, a.ID, stdoutLog,
		"web | "+envLine("GREETING", params["GREETING"]), "web | "+envLine("MULTI", "line1\nline2"),
		"web | "+envLine("QUOTED", params["QUOTED"]), "web | "+envLine("EMPTY", ""),
		"web | "+envLine("AMSERVER_ROLE", "backup"), "web | "+envLine("AMSERVER_EPOCH", "1"),
		"web | "+envLine("AMSERVER_TAG_TEAM", "live"), "web | "+envLine("AMSERVER_TAG_ON_CALL_PAGER", "x1"),
		"web | "+envLine("AMSERVER_STOP_DATETIME", "2030-01-01T00:00:00Z"),
		"side | "+envLine("FROM_PARAM", params["GREETING"]), "side | "+envLine("AMSERVER_BUNDLE", "b1"),
		"side | "+envLine("AMSERVER_ASSIGNMENT", a.ID), "side | "+envLine("AMSERVER_NODE", node))
	waitLog(t, dataDir, a.ID, stderrLog, "side | side says hi")
	if body := logOf(dataDir, a.ID, stdoutLog); strings.Contains(body, "__INTERNAL") || strings.Contains(body, "AMSERVER_TAG___") {
		t.Fatalf("a reserved tag reached the workload:\n%s", body)
	}

	// Promoted: the stack runs again with its new role and epoch.
	a.Role, a.Epoch = api.RolePrimary, 2
	d.Ensure(context.Background(), a)
	waitLog(t, dataDir, a.ID, stdoutLog, "web | "+envLine("AMSERVER_ROLE", "primary"), "web | "+envLine("AMSERVER_EPOCH", "2"))
	waitState(t, d, a, api.JobRunning, time.Minute)

	// A second assignment of the same template: the archive is not fetched again.
	b := assignment(node, "b2", "web", composeLaunch(ref, params), api.RuntimeCompose)
	waitState(t, d, b, api.JobRunning, 2*time.Minute)
	if n := src.fetches.Load(); n != 1 {
		t.Fatalf("the archive was fetched %d times, want once", n)
	}

	for _, x := range []api.Assignment{a, b} {
		x.Desired = api.DesiredStop
		waitState(t, d, x, api.JobStopped, 2*time.Minute)
		if rows := containersOf(t, x.ID); len(rows) != 0 {
			t.Fatalf("containers left after stop: %+v", rows)
		}
		if _, err := os.Stat(taskDir(dataDir+"/assignments", x.ID)); !os.IsNotExist(err) {
			t.Fatalf("the assignment's directory is still there: %v", err)
		}
	}
	if out, _ := exec.Command("docker", "network", "ls", "-q", "--filter", "label="+labelProject+"="+taskName(a.ID)).Output(); len(out) != 0 {
		t.Fatalf("the project's network is still there: %s", out)
	}
}

// TestComposeFailedContainer: a service that exits non-zero fails the
// assignment with its exit code and its last words.
func TestComposeFailedContainer(t *testing.T) {
	t.Parallel() // each its own node, data and containers; mostly waiting on Docker
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	ref := src.add("bad", tarball(t, stackFiles(t, `  bad:
    image: ${IMAGE}
    environment:
      WORKLOAD_EXIT: "3"
      WORKLOAD_AFTER: 1s
      WORKLOAD_STDERR: cannot open the capture card
`)))
	d := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	a := assignment(node, "b1", "enc", composeLaunch(ref, map[string]string{"IMAGE": testImage(t), "GREETING": "hi"}), api.RuntimeCompose)
	msg := waitState(t, d, a, api.JobFailed, 2*time.Minute)
	t.Logf("reported: %s", msg)
	for _, want := range []string{"service bad exited with code 3", "cannot open the capture card", "exiting with code 3"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("failure message lacks %q: %q", want, msg)
		}
	}
	if err := d.Stop(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if rows := containersOf(t, a.ID); len(rows) != 0 {
		t.Fatalf("containers left after stop: %+v", rows)
	}
}

// statusServer accepts the worker's status reports.
func statusServer(t *testing.T) *api.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	c, err := api.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestComposeReadoptAfterRestart: a worker that restarts (here: a new
// dispatcher over the same data, the old one gone without stopping
// anything) adopts its running stacks by label instead of starting them
// twice, and removes the one it no longer owns.
func TestComposeReadoptAfterRestart(t *testing.T) {
	t.Parallel() // each its own node, data and containers; mostly waiting on Docker
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	ref := src.add("web", tarball(t, stackFiles(t, "")))
	params := map[string]string{"IMAGE": testImage(t), "GREETING": "hi"}
	kept := assignment(node, "kept", "web", composeLaunch(ref, params), api.RuntimeCompose)
	moved := assignment(node, "moved", "web", composeLaunch(ref, params), api.RuntimeCompose)

	first := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	waitState(t, first, kept, api.JobRunning, 2*time.Minute)
	waitState(t, first, moved, api.JobRunning, 2*time.Minute)
	before := containerIDs(t, kept.ID)
	crash(first)

	second := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	if err := second.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := second.Running(); !slices.Equal(got, []string{kept.ID, moved.ID}) {
		t.Fatalf("adopted %v, want both", got)
	}
	w := &Worker{cfg: Config{NodeID: node, Driver: second}, logger: slog.New(slog.DiscardHandler)}
	kept.Status = api.JobRunning
	if err := w.reconcile(context.Background(), statusServer(t), []api.Assignment{kept}); err != nil {
		t.Fatal(err)
	}
	if rows := containersOf(t, moved.ID); len(rows) != 0 {
		t.Fatalf("the project no longer assigned here still has containers: %+v", rows)
	}
	waitState(t, second, kept, api.JobRunning, time.Minute)
	if after := containerIDs(t, kept.ID); !slices.Equal(before, after) {
		t.Fatalf("the adopted stack was started again: containers %v, then %v", before, after)
	}
	if n := src.fetches.Load(); n != 1 {
		t.Fatalf("the archive was fetched %d times, want once", n)
	}
}

func containerIDs(t *testing.T, id string) []string {
	var ids []string
	for _, r := range containersOf(t, id) {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// crash ends a dispatcher's container drivers as a killed worker would:
// watchers and log copies stop, the containers stay.
func crash(d *Dispatcher) {
	for _, drv := range d.drivers {
		if c, ok := drv.(*containerDriver); ok {
			c.cancel()
			c.mu.Lock()
			clear(c.tasks)
			c.mu.Unlock()
		}
	}
}

// TestComposeMemoryLimit: a job's memoryLimitMiB becomes every service's
// mem_limit and memswap_limit (through amserver's override file).
func TestComposeMemoryLimit(t *testing.T) {
	t.Parallel()
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	ref := src.add("web", tarball(t, stackFiles(t, "")))
	d := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	a := assignment(node, "b1", "web", composeLaunch(ref, map[string]string{"IMAGE": testImage(t), "GREETING": "hi"}), api.RuntimeCompose)
	a.MemoryLimitMiB = 96
	waitState(t, d, a, api.JobRunning, 2*time.Minute)
	rows := containersOf(t, a.ID)
	if len(rows) != 2 {
		t.Fatalf("want 2 containers, got %+v", rows)
	}
	for _, r := range rows {
		if got := inspectMemory(t, r.ID); got != "100663296 100663296" {
			t.Fatalf("%s: memory and memory+swap limits %q, want 96 MiB each", r.Names, got)
		}
	}
	a.Desired = api.DesiredStop
	waitState(t, d, a, api.JobStopped, 2*time.Minute)
}
