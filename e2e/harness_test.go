//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// envOr reads an environment variable with a default.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// settings are the suite's knobs (AMSERVER_E2E_*), read once.
type settings struct {
	full     bool          // AMSERVER_E2E_MODE=full: fresh cluster per run
	runs     int           // AMSERVER_E2E_RUNS: runs per nemesis in full mode
	duration time.Duration // AMSERVER_E2E_DURATION: workload time per run
	nemeses  []nemesisSpec // AMSERVER_E2E_NEMESES filter
}

func loadSettings() (settings, error) {
	var s settings
	switch mode := envOr("AMSERVER_E2E_MODE", "smoke"); mode {
	case "smoke":
	case "full":
		s.full = true
	default:
		return s, fmt.Errorf("AMSERVER_E2E_MODE=%q: want smoke or full", mode)
	}
	s.runs = 1
	if s.full {
		n, err := strconv.Atoi(envOr("AMSERVER_E2E_RUNS", "3"))
		if err != nil || n < 1 {
			return s, fmt.Errorf("AMSERVER_E2E_RUNS=%q: want a positive integer", os.Getenv("AMSERVER_E2E_RUNS"))
		}
		s.runs = n
	}
	def := "20s"
	if s.full {
		def = "60s"
	}
	d, err := time.ParseDuration(envOr("AMSERVER_E2E_DURATION", def))
	if err != nil || d < 4*time.Second {
		return s, fmt.Errorf("AMSERVER_E2E_DURATION=%q: want a duration of at least 4s", os.Getenv("AMSERVER_E2E_DURATION"))
	}
	s.duration = d
	filter := os.Getenv("AMSERVER_E2E_NEMESES")
	if s.nemeses, err = selectNemeses(filter); err != nil {
		return s, err
	}
	if !s.full && strings.TrimSpace(filter) == "" {
		s.nemeses = slices.DeleteFunc(slices.Clone(s.nemeses), func(n nemesisSpec) bool { return n.fullOnly })
	}
	return s, nil
}

// startCluster brings up a cluster of n servers for t and registers its
// teardown, which also runs when bring-up fails half-way; a failed
// bring-up keeps the project's logs under e2e/out first. (Runs keep their
// own logs.)
func startCluster(t *testing.T, n int, overlays ...string) *Cluster {
	t.Helper()
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var sec *Security
	if os.Getenv("AMSERVER_E2E_SECURE") == "1" {
		var err error
		if sec, err = NewSecurity(filepath.Join("out", "secure", strconv.FormatInt(started.UnixNano(), 36))); err != nil {
			t.Fatal(err)
		}
		t.Logf("secure deployment: ACLs, TLS (client certificates required), mutual TLS on Raft, gossip encryption; material in %s", sec.Dir)
	}
	c, err := StartCluster(ctx, t.Logf, n, sec, overlays...)
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := c.Down(ctx); err != nil {
				t.Errorf("teardown: %v", err)
			}
		})
	}
	if err != nil {
		if c != nil {
			path := filepath.Join("out", "failed-"+c.Project+".log")
			if lerr := c.SaveComposeLogs(ctx, path); lerr != nil {
				t.Logf("saving logs: %v", lerr)
			}
			t.Logf("container logs in e2e/%s", path)
		}
		t.Fatal(err)
	}
	t.Logf("cluster %s healthy after %s", c.Project, time.Since(started).Round(time.Second))
	return c
}
