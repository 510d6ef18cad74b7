package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// TestPrintKinds: list shows each bundle's kind; status shows a batch
// bundle's policy, when it finished, and each job's exit code and restarts.
func TestPrintKinds(t *testing.T) {
	f := newFake(t)
	three, zero := 3, 0
	batch := api.Bundle{
		BundleSpec: api.BundleSpec{ID: "etl", Pool: "live", Kind: api.KindBatch, TTLAfterFinished: "1h",
			Restart: &api.RestartPolicy{Attempts: 2, Delay: "30s", Mode: api.RestartFail},
			Jobs:    []api.Job{{Name: "load"}, {Name: "report"}}},
		State: api.StateFailed, FinishTime: fixtureNow.Add(-time.Minute),
		Replicas: []api.Replica{{Index: 0, Role: api.RolePrimary, State: api.StatePending, Jobs: []api.JobPlacement{
			{Name: "load", Status: api.JobExited, ExitCode: &three, Attempts: 2},
			{Name: "report", Status: api.JobExited, ExitCode: &zero}}}},
		Degradations: []api.Degradation{},
	}
	f.reply("GET /v1/bundles/etl", http.StatusOK, batch)
	f.reply("GET /v1/bundles", http.StatusOK, []api.BundleSummary{
		{ID: "etl", Pool: "live", Kind: api.KindBatch, State: api.StateFailed, Jobs: 2, WantReplicas: 1},
		{ID: "web", Pool: "live", Kind: api.KindService, State: api.StatePlaced, Jobs: 1, WantReplicas: 3},
	})
	r := runCLI(t, f.srv.URL, "", "bundle", "status", "etl")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"batch: restart 2 time(s) after 30s, then fail, deleted 1h after it ends", "Finished"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := cell(t, r.stdout, "EXIT", "0"); got != "3" {
		t.Fatalf("EXIT of the first job %q:\n%s", got, r.stdout)
	}
	if got := cell(t, r.stdout, "RESTARTS", "0"); got != "2" {
		t.Fatalf("RESTARTS %q:\n%s", got, r.stdout)
	}
	r = runCLI(t, f.srv.URL, "", "bundle", "list")
	if cell(t, r.stdout, "KIND", "etl") != "batch" || cell(t, r.stdout, "KIND", "web") != "service" || cell(t, r.stdout, "REPLICAS", "web") != "0/3" {
		t.Fatalf("list:\n%s", r.stdout)
	}
}

// TestKindExamples: the service and batch examples submit as they are
// against a real cluster (two simulated workers): the batch runs to
// complete with --wait (which waits for a batch to end); the service places
// one replica per node (two of its four, maxPerNode 1: degraded), then
// scales down to what fits.
func TestKindExamples(t *testing.T) {
	addr := startCluster(t)
	r := runCLI(t, addr, "", "bundle", "submit", "--wait", "../../examples/bundle-batch.json")
	if r.code != exitOK || !strings.Contains(r.stderr+r.stdout, "complete") {
		t.Fatalf("batch example: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, addr, "", "bundle", "submit", "--wait", "../../examples/bundle-service.json")
	if r.code != exitOK {
		t.Fatalf("service example: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, addr, "", "bundle", "scale", "web", "2"); r.code != exitOK {
		t.Fatalf("scale: exit %d %s", r.code, r.stderr)
	}
	r = runCLI(t, addr, "", "bundle", "status", "web")
	if !strings.Contains(r.stdout, "service: 2 replicas, at most 1 per node") || cell(t, r.stdout, "ROLE", "0") != "replica" {
		t.Fatalf("service status:\n%s", r.stdout)
	}
}
