package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// volumesOf lists the volumes of an assignment's compose project.
func volumesOf(t *testing.T, id string) []string {
	t.Helper()
	out, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "label="+labelProject+"="+taskName(id)).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// TestComposeRestartKeepsVolumes: a restart for a new generation brings a
// stack up again on its named volumes, whose data is the stack's (a
// database's files); the job's last stop removes them. The restart used
// to run `down -v`, which lost them.
func TestComposeRestartKeepsVolumes(t *testing.T) {
	t.Parallel()
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	compose := "services:\n  db:\n    image: ${IMAGE}\n    volumes:\n      - data:/data\nvolumes:\n  data: {}\n"
	ref := src.add("db", tarball(t, map[string][]byte{"compose.yaml": []byte(compose)}))
	d := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	a := assignment(node, "b1", "db", composeLaunch(ref, map[string]string{"IMAGE": testImage(t)}), api.RuntimeCompose)
	waitState(t, d, a, api.JobRunning, 2*time.Minute)
	if vols := volumesOf(t, a.ID); len(vols) != 1 {
		t.Fatalf("volumes %v, want the stack's one", vols)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(marker, []byte("written before the restart\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "cp", marker, serviceContainer(t, a.ID, "db")+":/data/marker").CombinedOutput(); err != nil {
		t.Fatalf("docker cp into the volume: %v\n%s", err, out)
	}
	before := serviceContainer(t, a.ID, "db")

	if err := d.stopToRestart(t.Context(), a.ID); err != nil {
		t.Fatalf("stop for a restart: %v", err)
	}
	a.Generation++
	waitState(t, d, a, api.JobRunning, 2*time.Minute)
	after := serviceContainer(t, a.ID, "db")
	if after == before {
		t.Fatal("the restart kept the old container: nothing was restarted")
	}
	out, err := exec.Command("docker", "cp", after+":/data/marker", "-").Output()
	if err != nil || !strings.Contains(string(out), "written before the restart") {
		t.Fatalf("the volume's data after the restart: %v (%q)", err, out)
	}

	a.Desired = api.DesiredStop
	waitState(t, d, a, api.JobStopped, 2*time.Minute)
	if vols := volumesOf(t, a.ID); len(vols) != 0 {
		t.Fatalf("volumes left after the last stop: %v", vols)
	}
}
