package worker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/internal/poll"
)

// The tests' workload (internal/testworkload), built once per run: a
// static binary in an image FROM scratch with a tag of its own, and a
// wasip1 module. TestMain removes both.
var (
	buildDir   string
	imageOnce  sync.Once
	imageTag   string
	imageErr   error
	moduleOnce sync.Once
	moduleWasm []byte
	moduleErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "amserver-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	if imageTag != "" {
		_ = exec.Command("docker", "rmi", "-f", imageTag).Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// requireDocker skips a test when Docker is absent, unless
// AMSERVER_REQUIRE_DOCKER=1 (CI), where that is a failure.
func requireDocker(t *testing.T) {
	t.Helper()
	out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("Docker is not available (`docker version`: %v: %s)", err, strings.TrimSpace(string(out)))
	if os.Getenv("AMSERVER_REQUIRE_DOCKER") == "1" {
		t.Fatal(msg + "; AMSERVER_REQUIRE_DOCKER=1 makes that a failure")
	}
	t.Skip(msg + "; set AMSERVER_REQUIRE_DOCKER=1 to fail instead")
}

func requireCompose(t *testing.T) {
	t.Helper()
	requireDocker(t)
	if _, ok := composeCommand(context.Background()); !ok {
		if os.Getenv("AMSERVER_REQUIRE_DOCKER") == "1" {
			t.Fatal("neither `docker compose` nor `docker-compose` works")
		}
		t.Skip("neither `docker compose` nor `docker-compose` works")
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func goBuild(t *testing.T, out string, env ...string) error {
	cmd := exec.Command("go", "build", "-o", out, "./internal/testworkload")
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build testworkload: %w: %s", err, b)
	}
	return nil
}

// testImage builds the workload image: no registry is ever asked.
func testImage(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() {
		ctx := filepath.Join(buildDir, "image")
		if imageErr = goBuild(t, filepath.Join(ctx, "workload"), "CGO_ENABLED=0", "GOOS=linux"); imageErr != nil {
			return
		}
		df := "FROM scratch\nCOPY workload /workload\nENTRYPOINT [\"/workload\"]\n"
		if imageErr = os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(df), 0o644); imageErr != nil {
			return
		}
		tag := "amserver-test-workload:t" + randomHex(4)
		if b, err := exec.Command("docker", "build", "-q", "-t", tag, ctx).CombinedOutput(); err != nil {
			imageErr = fmt.Errorf("docker build: %w: %s", err, b)
			return
		}
		imageTag = tag
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageTag
}

// testModule builds the workload as a wasip1 module.
func testModule(t *testing.T) []byte {
	t.Helper()
	moduleOnce.Do(func() {
		out := filepath.Join(buildDir, "main.wasm")
		if moduleErr = goBuild(t, out, "GOOS=wasip1", "GOARCH=wasm"); moduleErr == nil {
			moduleWasm, moduleErr = os.ReadFile(out)
		}
	})
	if moduleErr != nil {
		t.Fatal(moduleErr)
	}
	return moduleWasm
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tarball makes a template archive of the files.
func tarball(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fakeTemplates serves archives by digest and counts fetches.
type fakeTemplates struct {
	mu       sync.Mutex
	archives map[string][]byte
	fetches  atomic.Int64
}

func (f *fakeTemplates) add(name string, archive []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.archives == nil {
		f.archives = map[string][]byte{}
	}
	d := artifact.Digest(archive)
	f.archives[d] = archive
	return name + "@" + d
}

func (f *fakeTemplates) TemplateArchive(_ context.Context, _, digest string) (io.ReadCloser, error) {
	f.fetches.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.archives[digest]
	if !ok {
		return nil, &api.Error{Status: 404, Code: api.CodeNotFound, Message: "no such digest"}
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// testNode is a node id of its own, so that a test sees (and sweeps) only
// its own containers.
func testNode() string { return "t-" + randomHex(4) }

// newDispatcher makes a dispatcher for node with fast container watching,
// and sweeps every container, network and volume of the node at cleanup.
func newDispatcher(t *testing.T, node, dataDir string, src TemplateSource, runtimes ...string) *Dispatcher {
	t.Helper()
	d, err := NewDispatcher(context.Background(), RuntimeConfig{
		NodeID: node, DataDir: dataDir, Runtimes: runtimes, Templates: src, WatchInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = d.StopAll(ctx)
	})
	return d
}

// sweepNode removes whatever a test left of node's workloads, and fails
// the test if there was anything: a leftover is a defect.
func sweepNode(t *testing.T, node string) {
	t.Helper()
	cli, err := newDockerCLI()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := cli.ps(ctx, "label="+labelNode+"="+node)
	if err != nil {
		t.Errorf("sweep: %v", err)
		return
	}
	for _, r := range rows {
		t.Errorf("container %s (%s) of node %s left behind", r.Names, r.Assignment, node)
		if r.Project != "" {
			_ = cli.removeByLabel(ctx, labelProject+"="+r.Project, true)
		}
		_, _ = cli.run(ctx, "rm", "-f", "-v", r.ID)
	}
}

// assignment is a run assignment of bundle b's job j on node.
func assignment(node, b, j string, l api.Launch, runtime string) api.Assignment {
	return api.Assignment{ID: b + ":0:" + j + "@" + node, BundleID: b, Job: j, NodeID: node, Role: api.RolePrimary,
		Epoch: 1, Desired: api.DesiredRun, Launch: l, Runtime: runtime}
}

// waitState calls Ensure until it answers state (Ensure reports what the
// driver last saw) and returns the message.
func waitState(t *testing.T, d Driver, a api.Assignment, state string, within time.Duration) string {
	t.Helper()
	var got, msg string
	poll.Eventually(t, within, a.ID+" "+state, func() error {
		got, msg = d.Ensure(context.Background(), a)
		return poll.Check(got == state, "state %q (%s)", got, msg)
	})
	return msg
}

// logOf reads one of an assignment's log files under dataDir.
func logOf(dataDir, id, name string) string {
	b, _ := os.ReadFile(filepath.Join(dataDir, "assignments", taskName(id), name))
	return string(b)
}

// waitLog waits until an assignment's log file holds every want.
func waitLog(t *testing.T, dataDir, id, name string, want ...string) string {
	t.Helper()
	var body string
	poll.Eventually(t, 30*time.Second, name+" of "+id, func() error {
		body = logOf(dataDir, id, name)
		for _, w := range want {
			if !strings.Contains(body, w) {
				return fmt.Errorf("%s lacks %q; it holds:\n%s", name, w, body)
			}
		}
		return nil
	})
	return body
}

// envLine is how the workload prints one variable.
func envLine(name, value string) string { return fmt.Sprintf("env %q", name+"="+value) }
