//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/e2e/check"
)

// writeReliability merges this invocation's runs into the record beside
// the report in AMSERVER_E2E_REPORT (make jepsen: docs/reliability.json
// and docs/reliability.md), if set: the nemeses that ran replace their
// rows, the others keep theirs. commit is the tree's commit, read when the
// matrix started; took is each nemesis's wall time so far.
func writeReliability(t *testing.T, s settings, started time.Time, commit string, reports []check.Report, took map[string]time.Duration) {
	path := os.Getenv("AMSERVER_E2E_REPORT")
	if path == "" || !s.full || len(reports) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := fmt.Sprintf("make jepsen RUNS=%d", s.runs)
	if f := os.Getenv("AMSERVER_E2E_NEMESES"); f != "" {
		cmd += " NEMESES=" + f
	}
	if d := os.Getenv("AMSERVER_E2E_DURATION"); d != "" {
		cmd += " DURATION=" + d
	}
	meta := check.RunMeta{Date: started, Commit: commit, Machine: machineInfo(ctx), Runs: s.runs,
		Duration: s.duration, Took: time.Since(started), Secure: os.Getenv("AMSERVER_E2E_SECURE") == "1", Command: cmd}
	recPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".json"
	rec, err := check.ReadRecord(recPath)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	rec.Merge(meta, reports, took)
	if err := check.WriteRecord(recPath, rec); err != nil {
		t.Errorf("%v", err)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("reliability report: %v", err)
		return
	}
	if err := check.WriteReliability(f, rec, convergeWithin); err != nil {
		t.Errorf("%v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("reliability report: %v", err)
	}
	t.Logf("reliability report written to %s and %s", path, recPath)
}

// commitInfo is the short commit, marked dirty when the tree has changes
// other than the report itself.
func commitInfo(ctx context.Context) string {
	head, err := run(ctx, "git", "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	status, err := run(ctx, "git", "status", "--porcelain", "--untracked-files=no", "--", "..", ":!../docs/reliability.md", ":!../docs/reliability.json")
	if err == nil && status != "" {
		head += "-dirty"
	}
	return head
}

// machineInfo describes where the matrix ran: CPU, cores, memory, kernel
// and Docker, and the load when the report was written.
func machineInfo(ctx context.Context) string {
	parts := []string{fmt.Sprintf("%d cores", runtime.NumCPU())}
	if m := procField("/proc/cpuinfo", "model name"); m != "" {
		parts[0] += " (" + m + ")"
	}
	if kb, err := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		parts = append(parts, fmt.Sprintf("%.1f GiB memory", float64(kb)/(1<<20)))
	}
	if k, err := run(ctx, "uname", "-sr"); err == nil {
		parts = append(parts, k)
	}
	if v, err := docker(ctx, "version", "--format", "{{.Server.Version}}"); err == nil {
		parts = append(parts, "Docker "+v)
	}
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(l)); len(f) >= 3 {
			parts = append(parts, "load average at the end "+strings.Join(f[:3], " "))
		}
	}
	return strings.Join(parts, ", ")
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
