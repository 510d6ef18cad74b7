package worker

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// fakeCgroupRoot lays out a cgroup v2 mount in a directory: the root's
// controllers and the worker's cgroup w with subtree (or none).
func fakeCgroupRoot(t *testing.T, v2 bool, subtree *string) string {
	root := t.TempDir()
	if v2 {
		writeTestFile(t, filepath.Join(root, "cgroup.controllers"), "cpu memory pids")
	}
	if err := os.MkdirAll(filepath.Join(root, "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	if subtree != nil {
		writeTestFile(t, filepath.Join(root, "w", "cgroup.subtree_control"), *subtree)
	}
	return root
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMemLimiterDetect: limits are enforced only on cgroup v2 with the
// memory controller available to the worker's cgroup's children (enabled
// if it was not); otherwise the reason is kept for the one warning.
func TestMemLimiterDetect(t *testing.T) {
	memory, cpu := "cpu memory", "cpu"
	cases := []struct {
		name    string
		v2      bool
		subtree *string
		self    string
		reason  string // "" when enforced
	}{
		{"v2 with memory delegated", true, &memory, "0::/w\n", ""},
		{"v2, memory enabled by the worker", true, &cpu, "0::/w\n", ""},
		{"cgroup v1", false, &memory, "4:memory:/w\n0::/w\n", "not mounted"},
		{"no unified entry", true, &memory, "4:memory:/w\n", "not in /proc/self/cgroup"},
		{"no subtree_control", true, nil, "0::/w\n", "cgroup.subtree_control"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeCgroupRoot(t, tc.v2, tc.subtree)
			l := newMemLimiter(root, tc.self, slog.New(slog.DiscardHandler))
			if tc.reason == "" {
				if l.base != filepath.Join(root, "w") {
					t.Fatalf("base %q, reason %q", l.base, l.reason)
				}
				if b, _ := os.ReadFile(filepath.Join(root, "w", "cgroup.subtree_control")); !strings.Contains(string(b), "memory") {
					t.Fatalf("memory not enabled for children: %q", b)
				}
				return
			}
			if l.base != "" || !strings.Contains(l.reason, tc.reason) {
				t.Fatalf("base %q, reason %q, want one naming %q", l.base, l.reason, tc.reason)
			}
		})
	}
}

// TestMemLimiterTaskCgroup: a task's cgroup carries its limit in bytes and
// no swap, and goes away when released.
func TestMemLimiterTaskCgroup(t *testing.T) {
	memory := "memory"
	root := fakeCgroupRoot(t, true, &memory)
	l := newMemLimiter(root, "0::/w", slog.New(slog.DiscardHandler))
	cg := l.enter("b1:0:enc@n1", 256)
	if cg == nil {
		t.Fatal("no cgroup")
	}
	if b, _ := os.ReadFile(filepath.Join(cg.dir, "memory.max")); string(b) != "268435456" {
		t.Fatalf("memory.max %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cg.dir, "memory.swap.max")); string(b) != "0" {
		t.Fatalf("memory.swap.max %q", b)
	}
	// A fake cgroup directory keeps its files; a real one empties itself.
	for _, f := range []string{"memory.max", "memory.swap.max"} {
		_ = os.Remove(filepath.Join(cg.dir, f))
	}
	cg.release()
	if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
		t.Fatalf("cgroup left after release: %v", err)
	}
}

// TestExecMemoryLimit: an exec job with a memory limit runs either way;
// where cgroup v2 is delegated it runs inside its limited cgroup, and
// elsewhere the worker warns, once, that the limit is not enforced.
func TestExecMemoryLimit(t *testing.T) {
	var logs bytes.Buffer
	d, err := NewExecDriver(filepath.Join(t.TempDir(), "tasks"), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	d.stopGrace = 2 * time.Second
	t.Cleanup(func() { _ = d.StopAll(context.Background()) })
	pidFile := filepath.Join(t.TempDir(), "pid")
	for _, b := range []string{"b1", "b2"} {
		a := api.Assignment{
			ID: b + ":0:enc@w1", BundleID: b, Job: "enc", NodeID: "w1", Role: api.RolePrimary, Epoch: 1, Desired: api.DesiredRun,
			MemoryLimitMiB: 64,
			Launch:         api.Launch{Driver: "exec", Command: []string{"sh", "-c", "echo $$ > " + pidFile + "." + b + "; sleep 60"}},
		}
		d.Ensure(context.Background(), a)
		if ev := nextEvent(t, d); ev.State != api.JobRunning {
			t.Fatalf("%s: %+v", b, ev)
		}
	}
	if d.limiter.base == "" {
		if n := strings.Count(logs.String(), "is not enforced"); n != 1 {
			t.Fatalf("want one warning that limits are not enforced (%s), got %d:\n%s", d.limiter.reason, n, logs.String())
		}
		return
	}
	var pid []byte
	poll.Eventually(t, 10*time.Second, "the child's pid", func() error {
		pid, err = os.ReadFile(pidFile + ".b1")
		return err
	})
	cg, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cgroup")
	if err != nil || !strings.Contains(string(cg), "amserver-b1") {
		t.Fatalf("the child is not in its cgroup: %s %v", cg, err)
	}
}

// TestExecCgroupRefused: when the kernel refuses the task's cgroup (here a
// directory that is no cgroup at all), the job runs unlimited and the
// worker says once why its limit is not enforced.
func TestExecCgroupRefused(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	d, err := NewExecDriver(filepath.Join(t.TempDir(), "tasks"), logger)
	if err != nil {
		t.Fatal(err)
	}
	d.stopGrace = 2 * time.Second
	t.Cleanup(func() { _ = d.StopAll(context.Background()) })
	memory := "memory"
	d.limiter = newMemLimiter(fakeCgroupRoot(t, true, &memory), "0::/w", logger)
	if d.limiter.base == "" {
		t.Fatalf("the fake cgroup was not taken: %s", d.limiter.reason)
	}
	for _, b := range []string{"b1", "b2"} {
		a := api.Assignment{
			ID: b + ":0:enc@w1", BundleID: b, Job: "enc", NodeID: "w1", Role: api.RolePrimary, Epoch: 1, Desired: api.DesiredRun,
			MemoryLimitMiB: 64, Launch: api.Launch{Driver: "exec", Command: []string{"sleep", "60"}},
		}
		d.Ensure(context.Background(), a)
		if ev := nextEvent(t, d); ev.State != api.JobRunning {
			t.Fatalf("%s: %+v", b, ev)
		}
	}
	if n := strings.Count(logs.String(), "is not enforced"); n != 1 || !strings.Contains(logs.String(), "start in cgroup") {
		t.Fatalf("want one warning naming the refused cgroup, got %d:\n%s", n, logs.String())
	}
}
