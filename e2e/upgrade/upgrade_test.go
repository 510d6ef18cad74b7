//go:build upgrade

// Package upgrade is the rolling-upgrade check (make upgrade-check): three
// servers and two workers of an older amserver binary on loopback, with
// varied state and a snapshot the old binary wrote, are upgraded one
// server at a time as docs/operations.md §5 says while a writer keeps
// creating bundles; then the new version's features are used, no
// acknowledged create may be missing, and the new servers must restart
// from their data. The binaries come from the environment: the make
// target builds them.
package upgrade

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// report collects what each step found, printed as the PASS/FAIL summary.
type report struct {
	t     *testing.T
	lines []string
	step  string
	start time.Time
	// failed is whether the test had failed when the step began.
	failed bool
}

func (r *report) begin(step string) {
	r.end("")
	r.step, r.start, r.failed = step, time.Now(), r.t.Failed()
	r.t.Logf("---- %s", step)
}

func (r *report) end(note string) {
	if r.step == "" {
		return
	}
	verdict := "ok    "
	if r.t.Failed() && !r.failed {
		verdict = "FAIL  "
	}
	line := verdict + r.step + " (" + time.Since(r.start).Round(100*time.Millisecond).String() + ")"
	if note != "" {
		line += ": " + note
	}
	r.lines = append(r.lines, line)
	r.step = ""
}

func (r *report) print() {
	verdict := "PASS"
	if r.t.Failed() {
		verdict = "FAIL"
		if r.step != "" {
			r.lines = append(r.lines, "FAIL  "+r.step)
		}
	}
	r.t.Logf("upgrade check %s -> HEAD: %s\n  %s", os.Getenv("AMSERVER_UPGRADE_BASE"), verdict, strings.Join(r.lines, "\n  "))
}

func TestRollingUpgrade(t *testing.T) {
	oldBin, newBin := os.Getenv("AMSERVER_UPGRADE_OLD"), os.Getenv("AMSERVER_UPGRADE_NEW")
	if oldBin == "" || newBin == "" {
		t.Skip("AMSERVER_UPGRADE_OLD and AMSERVER_UPGRADE_NEW name the binaries: run make upgrade-check BASE=<ref>")
	}
	l := newLayout(t, oldBin)
	r := &report{t: t}
	t.Cleanup(r.print)
	t.Cleanup(func() {
		for _, p := range slices.Concat(l.servers, l.workers) {
			p.stop(t, syscall.SIGKILL)
		}
		if t.Failed() {
			for _, p := range slices.Concat(l.servers, l.workers) {
				t.Logf("log of %s (%s):\n%s", p.id, p.log, p.tail(25))
			}
		}
	})

	r.begin("start 3 old servers and 2 workers")
	for _, p := range slices.Concat(l.servers, l.workers) {
		l.start(t, p, newBin)
	}
	c := l.servers[0].client(t)
	l.healthy(t, 90*time.Second)

	r.begin("seed state on the old cluster")
	seed(t, c)

	r.begin("old binary writes a snapshot on every server (save, restore)")
	oldSnapshot(t, l, c)
	r.end(l.digestsAgree(t, 30*time.Second))

	w := startWriter(t, l)
	upgradeAll(t, r, l, w, c, newBin)

	r.begin("rollout of the service bundle's new launch, settle window 1 s")
	// Three replicas one at a time, each settling 1 s: without the new
	// leader's settle window the none driver's rollout takes well under 1 s.
	if took := rollout(t, c, "2", 2); took < 2*time.Second {
		t.Errorf("the rollout of 3 replicas took %s: the settle window of 1 s was not kept", took)
	}
	r.begin("service apply of a changed node service")
	applyService(t, newBin, l.servers[1], c)

	moveToWAL(t, r, l, w, c, newBin)

	r.begin("no acknowledged create lost")
	w.halt()
	checkCreates(t, w, c)
	r.end(w.counts())

	r.begin("restart every new server from its data (SIGKILL, start)")
	restartFromData(t, l, w, c, newBin)
	r.end(l.digestsAgree(t, 30*time.Second))

	// docs/operations.md §5 promises no way back; say what happens.
	r.begin("downgrade one follower (not promised: reported only)")
	r.end(tryDowngrade(t, l, oldBin))
}

// mixedTraffic uses, with new followers and the old leader, what both
// versions have but the new one changed: a service rollout (the old
// leader's commands carry no SettleRollout) and a node service change
// (no Update: the record changes, the running instances keep their
// launch). The new followers must apply them as the old servers do.
func mixedTraffic(t *testing.T, r *report, l *layout, w *writer, c *api.Client) {
	t.Helper()
	r.begin("mixed versions: the old leader's rollout and node service change")
	rollout(t, c, "1b", 1)
	putServiceRecordOnly(t, c, "1b")
	r.end(w.paused(func() string { return l.digestsAgree(t, 30*time.Second) }))
}

// upgradeAll upgrades every server in turn, followers first, each while
// the writer runs, and checks the digests after each; after the first one
// it sends the mixed cluster the traffic both versions know.
func upgradeAll(t *testing.T, r *report, l *layout, w *writer, c *api.Client, newBin string) {
	t.Helper()
	leader := l.healthy(t, 60*time.Second)
	for i, s := range restartOrder(l.servers, leader) {
		r.begin("upgrade " + s.id)
		restored := upgradeServer(t, l, s, newBin)
		w.more(t, 50)
		agreed := w.paused(func() string { return l.digestsAgree(t, 30*time.Second) })
		r.end(restored + "; " + agreed + "; writer " + w.counts())
		if i == 0 {
			mixedTraffic(t, r, l, w, c)
		}
	}
}

// restartFromData kills every server and starts it again: each restores
// its snapshot (still the old binary's) and replays its log; nothing
// acknowledged is lost and writes go on.
func restartFromData(t *testing.T, l *layout, w *writer, c *api.Client, newBin string) {
	t.Helper()
	for _, s := range l.servers {
		s.stop(t, syscall.SIGKILL)
	}
	for _, s := range l.servers {
		l.start(t, s, newBin)
	}
	l.healthy(t, 60*time.Second)
	for _, s := range l.servers {
		if !startedFromSnapshot(s) {
			t.Errorf("%s restarted without restoring its snapshot (no %q in its log)", s.id, "restored from snapshot")
		}
	}
	checkCreates(t, w, c)
	if _, err := c.CreateBundle(t.Context(), loadSpec("after-restart")); err != nil {
		t.Fatalf("create after the restart: %v", err)
	}
}

// restartOrder is the servers, followers first and the leader last.
func restartOrder(servers []*proc, leader *proc) []*proc {
	out := slices.DeleteFunc(slices.Clone(servers), func(s *proc) bool { return s == leader })
	return append(out, leader)
}

// oldSnapshot saves the old cluster's state and restores it: Raft stores
// the restore as a snapshot on the leader and installs it on each
// follower, so every data directory then holds a snapshot the old binary
// wrote, which the new binary starts from.
func oldSnapshot(t *testing.T, l *layout, c *api.Client) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := c.SnapshotSave(t.Context(), &buf); err != nil {
		t.Fatalf("snapshot save: %v", err)
	}
	if err := c.SnapshotRestore(t.Context(), &buf); err != nil {
		t.Fatalf("snapshot restore: %v", err)
	}
	poll.Eventually(t, 30*time.Second, "a snapshot in every server's data directory", func() error {
		for _, s := range l.servers {
			ok, err := s.hasSnapshot()
			if err != nil || !ok {
				return poll.Check(false, "%s: snapshot %v, %v", s.id, ok, err)
			}
		}
		return nil
	})
}

// upgradeServer is docs/operations.md §5 for one server: SIGTERM, the new
// binary's data-dir check, a start with the new binary and the same flags,
// and the wait until the cluster is healthy with it a voter. It says how
// the server came back.
func upgradeServer(t *testing.T, l *layout, s *proc, newBin string) string {
	t.Helper()
	rejoined := restartWith(t, l, s, newBin, "check")
	if !startedFromSnapshot(s) {
		t.Errorf("%s started without restoring the old binary's snapshot (no %q in its log)", s.id, "restored from snapshot")
	}
	return "started from the old snapshot, " + rejoined
}

// restartWith stops a healthy server (SIGTERM), runs bin's `operator
// data-dir <step>` on its data directory, starts it on bin and waits for
// it to rejoin and the cluster to be healthy; it returns how it rejoined.
func restartWith(t *testing.T, l *layout, s *proc, bin, step string) string {
	t.Helper()
	h, err := s.client(t).Health(t.Context())
	if err != nil {
		t.Fatalf("health of %s before its restart: %v", s.id, err)
	}
	s.stop(t, syscall.SIGTERM)
	out, err := runCLI(bin, "operator", "data-dir", step, "--data-dir", s.dataDir)
	if err != nil {
		t.Fatalf("operator data-dir %s of %s: %v\n%s", step, s.id, err, out)
	}
	s.bin = bin
	l.start(t, s, bin)
	rejoined := l.rejoined(t, s.id, h.Index)
	l.healthy(t, 60*time.Second)
	return rejoined
}

// startedFromSnapshot reports whether the server's last start restored a
// snapshot: Raft logs "restored from snapshot" when it does.
func startedFromSnapshot(s *proc) bool {
	return bytes.Contains(lastRun(s), []byte("restored from snapshot"))
}

// lastRun is the process's log since its last start.
func lastRun(s *proc) []byte {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return []byte(err.Error())
	}
	return b[max(bytes.LastIndex(b, []byte("==== ")), 0):]
}

func checkCreates(t *testing.T, w *writer, c *api.Client) {
	t.Helper()
	missing, phantom := w.lost(t, c)
	if len(missing) > 0 {
		t.Errorf("%d acknowledged creates are missing: %v", len(missing), missing)
	}
	if len(phantom) > 0 {
		t.Errorf("%d refused creates exist: %v", len(phantom), phantom)
	}
}

// tryDowngrade starts a follower again with the old binary and says what
// happened. docs/operations.md §5 promises no downgrade.
func tryDowngrade(t *testing.T, l *layout, oldBin string) string {
	t.Helper()
	leader := l.healthy(t, 30*time.Second)
	s := restartOrder(l.servers, leader)[0]
	s.stop(t, syscall.SIGTERM)
	s.bin = oldBin
	l.start(t, s, "")
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-s.done:
			return "the old binary exited: " + errString(s.exitErr) + ": " + panicLine(s)
		case <-deadline.C:
			return "not healthy after 30 s: " + errString(last) + "; log: " + s.tail(5)
		case <-tick.C:
			if _, last = l.checkHealthy(t); last == nil {
				return "the old binary rejoined and the cluster is healthy"
			}
		}
	}
}

// panicLine is the first line of a panic in the process's last run.
func panicLine(s *proc) string {
	last := lastRun(s)
	if i := bytes.Index(last, []byte("panic: ")); i >= 0 {
		line, _, _ := bytes.Cut(last[i:], []byte("\n"))
		return string(line)
	}
	return "no panic in its log"
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
