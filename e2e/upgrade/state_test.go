//go:build upgrade

package upgrade

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

func legacy(env map[string]string) api.Launch {
	return api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: api.DriverNone, Env: env}}
}

// webSpec is the service bundle whose launch the new version rolls out.
func webSpec(version string) api.BundleSpec {
	return api.BundleSpec{ID: "web", Pool: "default", Kind: api.KindService, Count: 3, MaxUnavailable: 1,
		Jobs: []api.Job{{Name: "server", Requirements: api.Requirements{Capacity: 0.5},
			Launch: legacy(map[string]string{"VERSION": version})}}}
}

func sidecar(v string) api.NodeService {
	return api.NodeService{ID: "sidecar", Pools: []string{"default"}, Requirements: api.ServiceRequirements{Capacity: 0.25},
		Launch: legacy(map[string]string{"V": v})}
}

// seed writes the varied state of an old cluster through the API: caps, a
// second pool, resilient bundles (primary and backup), a service bundle of
// 3, a batch bundle, a node service and a template, and waits for the
// workers to run what is placed.
func seed(t *testing.T, c *api.Client) {
	t.Helper()
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed %s: %v", what, err)
		}
	}
	_, err := c.SetCaps(ctx, api.ClusterCaps{PoolCaps: api.PoolCaps{MaxCapacity: 1000, MaxCores: 64}})
	must("caps", err)
	_, err = c.PutPool(ctx, api.Pool{Name: "reserve", Kind: "cluster", Caps: api.PoolCaps{MaxCapacity: 8, MaxCores: 4}})
	must("pool reserve", err)
	for i := range 3 {
		_, err = c.CreateBundle(ctx, api.BundleSpec{ID: fmt.Sprintf("res-%d", i), Pool: "default", Priority: api.PriorityGold,
			Resilience: &api.Resilience{SameNode: api.Forbid},
			Jobs:       []api.Job{{Name: "enc", Requirements: api.Requirements{Capacity: 1, Cores: 1}, Launch: api.Launch{Driver: api.DriverNone}}}})
		must("resilient bundle", err)
	}
	_, err = c.CreateBundle(ctx, webSpec("1"))
	must("service bundle", err)
	_, err = c.CreateBundle(ctx, api.BundleSpec{ID: "nightly", Pool: "default", Kind: api.KindBatch,
		Restart: &api.RestartPolicy{Attempts: 1, Mode: api.RestartFail},
		Jobs:    []api.Job{{Name: "report", Requirements: api.Requirements{Capacity: 1}, Launch: legacy(nil)}}})
	must("batch bundle", err)
	_, err = c.PutService(ctx, sidecar("1"))
	must("node service", err)
	_, err = c.PutTemplate(ctx, "stack", bytes.NewReader(composeArchive(t)))
	must("template", err)

	poll.Eventually(t, 60*time.Second, "the seeded bundles placed and the sidecar running on both workers", func() error {
		for _, id := range []string{"res-0", "res-1", "res-2", "web"} {
			b, _, err := c.Bundle(ctx, id, nil)
			if err != nil {
				return err
			}
			if b.State != api.StatePlaced || !allRunning(b) {
				return fmt.Errorf("%s is %s: %+v", id, b.State, b.Replicas)
			}
		}
		return sidecarAt(ctx, c, 0)
	})
}

func composeArchive(t *testing.T) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("services:\n  web:\n    image: nginx:alpine\n")
	if err := tw.WriteHeader(&tar.Header{Name: "compose.yaml", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func allRunning(b *api.Bundle) bool {
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Status != api.JobRunning {
				return false
			}
		}
	}
	return len(b.Replicas) > 0
}

// sidecarAt checks the node service's instance on each worker: desired
// run, running, at generation gen.
func sidecarAt(ctx context.Context, c *api.Client, gen uint64) error {
	for _, w := range []string{"w1", "w2"} {
		as, _, err := c.Assignments(ctx, w, nil)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(as, func(a api.Assignment) bool { return a.ServiceID == "sidecar" })
		if i < 0 {
			return fmt.Errorf("no sidecar instance on %s", w)
		}
		if a := as[i]; a.Desired != api.DesiredRun || a.Status != api.JobRunning || a.Generation != gen {
			return fmt.Errorf("sidecar on %s: desired %s, status %s, generation %d (want %d)", w, a.Desired, a.Status, a.Generation, gen)
		}
	}
	return nil
}

// rollout replaces the service bundle's launch with version and waits
// until every replica runs generation gen and the rollout is over; it
// returns how long that took.
func rollout(t *testing.T, c *api.Client, version string, gen uint64) time.Duration {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	if _, err := c.ReplaceBundle(ctx, webSpec(version), 0); err != nil {
		t.Fatalf("replace web's launch: %v", err)
	}
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("web rolled out to generation %d, every replica running", gen), func() error {
		b, _, err := c.Bundle(ctx, "web", nil)
		if err != nil {
			return err
		}
		if b.Generation != gen || b.Rolling || !allRunning(b) || len(b.Replicas) != 3 {
			return fmt.Errorf("web: generation %d, rolling %v, %d replicas %+v", b.Generation, b.Rolling, len(b.Replicas), b.Replicas)
		}
		return nil
	})
	took := time.Since(start)
	for _, w := range []string{"w1", "w2"} {
		as, _, err := c.Assignments(ctx, w, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.BundleID == "web" && (a.Launch.Job == nil || a.Launch.Job.Env["VERSION"] != version) {
				t.Errorf("web's assignment %s on %s keeps launch %+v", a.ID, w, a.Launch.Job)
			}
		}
	}
	return took
}

// applyService runs the new binary's `service apply` with a changed
// launch and waits for both instances to run it at generation 1, and for
// the serviceUpdated event.
func applyService(t *testing.T, newBin string, s *proc, c *api.Client) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sidecar.json")
	body := `{"id": "sidecar", "pools": ["default"], "requirements": {"capacity": 0.25},
  "launch": {"kind": "legacy", "job": {"driver": "none", "env": {"V": "2"}}}}`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(newBin, "service", "apply", file, "--address", s.url())
	if err != nil {
		t.Fatalf("service apply: %v\n%s", err, out)
	}
	poll.Eventually(t, 30*time.Second, "the sidecar relaunched with V=2 at generation 1 on both workers", func() error {
		return sidecarAt(t.Context(), c, 1)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errFound := errors.New("found")
	err = c.Events(ctx, 0, func(e api.Event) error {
		if e.Type == "serviceUpdated" {
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		t.Errorf("no serviceUpdated event after the apply: %v", err)
	}
}

// putServiceRecordOnly changes the node service's launch to v through c
// in a mixed cluster (no UpsertServiceRequest.Update): the record changes,
// the running instances keep their launch at generation 0.
func putServiceRecordOnly(t *testing.T, c *api.Client, v string) {
	t.Helper()
	if _, err := c.PutService(t.Context(), sidecar(v)); err != nil {
		t.Fatalf("put the node service: %v", err)
	}
	poll.Eventually(t, 10*time.Second, "the sidecar record changed, its instances untouched", func() error {
		svc, _, err := c.Service(t.Context(), "sidecar", nil)
		if err != nil {
			return err
		}
		if svc.Launch.Job == nil || svc.Launch.Job.Env["V"] != v {
			return fmt.Errorf("sidecar launch %+v", svc.Launch.Job)
		}
		return sidecarAt(t.Context(), c, 0)
	})
}

// runCLI runs an amserver client command and returns its output.
func runCLI(bin string, args ...string) ([]byte, error) {
	return exec.Command(bin, args...).CombinedOutput()
}
