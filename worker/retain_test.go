package worker

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/fakeclock"
	"github.com/amserver/amserver/internal/poll"
)

func openStore(t *testing.T, root string, clock *fakeclock.Clock) *retainStore {
	t.Helper()
	s, err := openRetainStore(root, slog.New(slog.DiscardHandler), clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// taskFiles makes task id's directory under base with its output and a
// file that is not output.
func taskFiles(t *testing.T, base, id, stdout, stderr string) string {
	t.Helper()
	dir := taskDir(base, id)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{stdoutLog: stdout, stderrLog: stderr, "state.json": "{}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func keepTask(t *testing.T, s *retainStore, base, id, stdout string) {
	t.Helper()
	if err := s.keep(id, taskFiles(t, base, id, stdout, "err of "+id)); err != nil {
		t.Fatal(err)
	}
}

// served reads a stream of what the store serves for id ("" and false
// when it serves nothing).
func served(s *retainStore, id, name string) (string, bool) {
	dir, ok := s.lookup(id)
	if !ok {
		return "", false
	}
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b), true
}

func entries(t *testing.T, dir string) int {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// TestRetainStoreKeep: keeping moves the two output files and nothing
// else; the last keep of an id wins; only kept ids are served, whatever
// the id looks like.
func TestRetainStoreKeep(t *testing.T) {
	base, root := t.TempDir(), filepath.Join(t.TempDir(), "retained")
	s := openStore(t, root, fakeclock.New(time.Now().Truncate(time.Second)))
	id := "b1:0:job@w1"
	src := taskFiles(t, base, id, "first run", "")
	if err := s.keep(id, src); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{stdoutLog, stderrLog} {
		if _, err := os.Stat(filepath.Join(src, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s still in the task dir: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "state.json")); err != nil {
		t.Fatalf("keep took more than the output: %v", err)
	}
	keepTask(t, s, base, id, "second run")
	if out, ok := served(s, id, stdoutLog); !ok || out != "second run" {
		t.Fatalf("stdout %q %v, want the second run's", out, ok)
	}
	if errs, _ := served(s, id, stderrLog); errs != "err of "+id {
		t.Fatalf("stderr %q", errs)
	}
	if err := s.keep("quiet", filepath.Join(base, "never-ran")); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"quiet", "b2:0:job@w1", "", "..", "../retained", taskName(id), retainedIDFile} {
		if dir, ok := s.lookup(other); ok {
			t.Errorf("id %q served from %s", other, dir)
		}
	}
	if n := entries(t, root); n != 1 {
		t.Fatalf("%d entries in the store, want 1", n)
	}
}

// TestRetainStoreBounds: output expires after the retention period (0:
// the default, negative: none kept), and beyond the count bound the
// oldest goes first.
func TestRetainStoreBounds(t *testing.T) {
	cases := []struct {
		name    string
		maxAge  time.Duration
		maxKeep int
		keep    int           // tasks kept, a second apart
		after   time.Duration // when pruning runs, since the first was kept
		served  []int         // which tasks are still served, by order kept
	}{
		{"within the default period", 0, 10, 3, 59 * time.Minute, []int{0, 1, 2}},
		{"past the default period", 0, 10, 3, time.Hour, []int{1, 2}},
		{"past a period of its own", 10 * time.Minute, 10, 3, 10*time.Minute + 2*time.Second, nil},
		{"count bound", 0, 3, 5, 5 * time.Second, []int{2, 3, 4}},
		{"keeping none", -1, 10, 2, 5 * time.Second, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, root, clock := t.TempDir(), filepath.Join(t.TempDir(), "retained"), fakeclock.New(time.Now().Truncate(time.Second))
			s := openStore(t, root, clock)
			s.setMaxAge(tc.maxAge)
			s.maxKeep = tc.maxKeep
			start, ids := clock.Now(), make([]string, tc.keep)
			for i := range ids {
				ids[i] = "b" + string(rune('a'+i)) + ":0:job@w1"
				keepTask(t, s, base, ids[i], ids[i])
				clock.Advance(time.Second)
			}
			clock.Advance(start.Add(tc.after).Sub(clock.Now()))
			s.prune()
			want := map[string]bool{}
			for _, i := range tc.served {
				want[ids[i]] = true
			}
			for _, id := range ids {
				if _, ok := served(s, id, stdoutLog); ok != want[id] {
					t.Errorf("%s served %v, want %v", id, ok, want[id])
				}
			}
			if n := entries(t, root); n != len(tc.served) {
				t.Fatalf("%d directories left in the store, want %d", n, len(tc.served))
			}
		})
	}
}

// TestRetainStoreRestart: a new store over the same root (a worker
// restart) serves what the last one kept, ages it from when it was kept,
// and removes what is not a complete kept task.
func TestRetainStoreRestart(t *testing.T) {
	base, root, clock := t.TempDir(), filepath.Join(t.TempDir(), "retained"), fakeclock.New(time.Now().Truncate(time.Second))
	s := openStore(t, root, clock)
	keepTask(t, s, base, "old:0:job@w1", "old output")
	clock.Advance(30 * time.Minute)
	keepTask(t, s, base, "new:0:job@w1", "new output")
	// A keep cut short (no id file yet), and a directory whose id file
	// names another task: neither is served, both are removed.
	if err := os.MkdirAll(filepath.Join(root, taskName("cut:0:job@w1")), 0o750); err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(root, "am-forged")
	if err := os.MkdirAll(forged, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(forged, retainedIDFile), []byte("new:0:job@w1\n"), 0o640); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, root, clock)
	for id, want := range map[string]string{"old:0:job@w1": "old output", "new:0:job@w1": "new output"} {
		if out, ok := served(s2, id, stdoutLog); !ok || out != want {
			t.Fatalf("after a restart %s: %q %v, want %q", id, out, ok, want)
		}
	}
	if n := entries(t, root); n != 2 {
		t.Fatalf("%d directories after the restart, want the 2 kept", n)
	}
	clock.Advance(30 * time.Minute) // the first kept is an hour old
	s2.prune()
	if _, ok := s2.lookup("old:0:job@w1"); ok {
		t.Fatal("output kept before the restart did not expire")
	}
	if _, ok := s2.lookup("new:0:job@w1"); !ok {
		t.Fatal("the newer output expired with the older")
	}
}

// TestRetainStoreRun: run prunes at once and then periodically until its
// context ends.
func TestRetainStoreRun(t *testing.T) {
	base, root, clock := t.TempDir(), filepath.Join(t.TempDir(), "retained"), fakeclock.New(time.Now().Truncate(time.Second))
	s := openStore(t, root, clock)
	keepTask(t, s, base, "a:0:job@w1", "a")
	s.every = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.run(ctx) }()
	defer func() { cancel(); <-done }()
	clock.Advance(2 * time.Hour)
	poll.Eventually(t, 10*time.Second, "expired output removed", func() error {
		n := entries(t, root)
		return poll.Check(n == 0, "%d directories left", n)
	})
}

// TestRetainBatchOutput: a batch exec job's output is served after its
// last stop (desired stopped, or no longer listed), with tail and a follow
// that ends, and again after a restart; a stop before running again and a
// service's stop remove it; the task's directory goes in every case.
func TestRetainBatchOutput(t *testing.T) {
	dataDir := t.TempDir()
	d := newDispatcher(t, "w1", dataDir, nil, api.RuntimeExec)
	w := &Worker{cfg: Config{NodeID: "w1", Driver: d}, logger: slog.New(slog.DiscardHandler)}
	batch := `echo "line 1"; echo "line 2"; echo "line 3"; echo warn >&2`
	desiredStop := func(a api.Assignment) { a.Desired = api.DesiredStop; d.Ensure(t.Context(), a) }
	unlisted := func(a api.Assignment) {
		if err := w.reconcile(t.Context(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	restart := func(a api.Assignment) { _ = d.Stop(t.Context(), a.ID) }
	cases := []struct {
		name    string
		runOnce bool
		stop    func(api.Assignment)
		kept    bool
	}{
		{"batch desired stopped", true, desiredStop, true},
		{"batch no longer listed", true, unlisted, true},
		{"batch stopped to run again", true, restart, false},
		{"service no longer listed", false, unlisted, false},
	}
	srv := logServer(t, d)
	var kept, gone []string
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := batch
			if !tc.runOnce {
				script += "; exec sleep 600"
			}
			a := assignment("w1", "b"+string(rune('1'+i)), "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", script}}, api.RuntimeExec)
			a.RunOnce = tc.runOnce
			if tc.runOnce {
				waitState(t, d, a, api.JobExited, 30*time.Second)
				checkServed(t, srv, a.ID) // held and exited: a follow ends too
			} else {
				waitState(t, d, a, api.JobRunning, 30*time.Second)
				waitLog(t, dataDir, a.ID, stderrLog, "warn")
			}
			tc.stop(a)
			if _, err := os.Stat(filepath.Join(dataDir, "assignments", taskName(a.ID))); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the task directory outlived the stop: %v", err)
			}
			if !tc.kept {
				gone = append(gone, a.ID)
				checkNotServed(t, srv, a.ID)
				return
			}
			kept = append(kept, a.ID)
			checkServed(t, srv, a.ID)
		})
	}
	// A restarted worker (a new dispatcher over the same data) still has it.
	srv2 := logServer(t, newDispatcher(t, "w1", dataDir, nil, api.RuntimeExec))
	for _, id := range kept {
		checkServed(t, srv2, id)
	}
	for _, id := range append(gone, "b9:0:job@w1") {
		checkNotServed(t, srv2, id)
	}
}

// checkServed: id's whole output of the batch script, its tail, its
// stderr, and a follow that ends at the end of the file.
func checkServed(t *testing.T, srv *httptest.Server, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		q    url.Values
		want string
	}{
		{nil, "line 1\nline 2\nline 3\n"},
		{url.Values{"tail": {"2"}}, "line 2\nline 3\n"},
		{url.Values{"stream": {"stderr"}}, "warn\n"},
		{url.Values{"follow": {"true"}, "tail": {"1"}}, "line 3\n"},
	} {
		status, body := readAll(t, getLogs(t, ctx, srv, id, "reader", tc.q))
		if status != 200 || body != tc.want {
			t.Fatalf("%s with %v: %d %q, want %q", id, tc.q, status, body, tc.want)
		}
	}
}

func checkNotServed(t *testing.T, srv *httptest.Server, id string) {
	t.Helper()
	status, body := readAll(t, getLogs(t, t.Context(), srv, id, "reader", nil))
	if status != 404 || errorCode(body) != api.CodeNotFound {
		t.Fatalf("%s: %d %s, want not found", id, status, body)
	}
}

// TestWorkerRetainFinished: Config.RetainFinished reaches the driver's
// store, 0 as the default.
func TestWorkerRetainFinished(t *testing.T) {
	for _, tc := range []struct{ set, want time.Duration }{{0, DefaultRetainFinished}, {5 * time.Minute, 5 * time.Minute}, {-1, -1}} {
		d := newDispatcher(t, "w1", t.TempDir(), nil, api.RuntimeExec)
		gc := gossip.DefaultConfig()
		gc.BindAddr, gc.BindPort = "127.0.0.1", 0
		w, err := New(Config{NodeID: "w1", Inventory: api.NodeSpec{Pool: "default", TotalCapacity: 1},
			Gossip: gc, Driver: d, RetainFinished: tc.set})
		if err != nil {
			t.Fatal(err)
		}
		_ = w.gossip.Shutdown()
		if w.retain != d.retain || d.retain.maxAge != tc.want {
			t.Fatalf("RetainFinished %s: the store keeps %s, want %s", tc.set, d.retain.maxAge, tc.want)
		}
	}
}
