package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// Labels on every container amserver starts (compose or docker runtime):
// they are how a restarted worker finds its workloads again.
const (
	labelBundle     = "amserver.bundle"
	labelJob        = "amserver.job"
	labelAssignment = "amserver.assignment"
	labelNode       = "amserver.node"
	labelRuntime    = "amserver.runtime" // compose or docker: which driver owns it
	labelSpec       = "amserver.spec"    // hash of what was deployed (specHash)
	labelProject    = "com.docker.compose.project"
	labelService    = "com.docker.compose.service"
)

// passEnv are the variables the docker and compose CLIs run with, besides
// DOCKER_*: nothing of the worker's own environment (tokens, AMSERVER_*)
// reaches them, and compose cannot take a variable from the worker's
// environment over the project's .env (no template parameter may take
// these names: api.ReservedParameter).
var passEnv = api.CLIEnvNames

// cliEnv is the environment the docker and compose CLIs run with.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range passEnv {
			if name == p {
				env = append(env, kv)
			}
		}
		if strings.HasPrefix(name, "DOCKER_") {
			env = append(env, kv)
		}
	}
	return env
}

// dockerCLI runs the docker CLI. The CLI (rather than the Engine API) is
// what compose needs anyway, and it honours the operator's DOCKER_HOST,
// contexts and TLS settings.
type dockerCLI struct {
	bin string
	env []string
}

func newDockerCLI() (*dockerCLI, error) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		return nil, fmt.Errorf("docker CLI: %w", err)
	}
	return &dockerCLI{bin: bin, env: cliEnv()}, nil
}

// command builds a CLI call: bin may be docker or a compose command line.
func (c *dockerCLI) command(ctx context.Context, argv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], append(append([]string(nil), argv[1:]...), args...)...)
	cmd.Env = c.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runCmd runs cmd and returns its stdout; a failure carries the last
// lines of its stderr.
func runCmd(cmd *exec.Cmd) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		what := strings.Join(cmd.Args[1:min(len(cmd.Args), 3)], " ")
		return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", cmd.Args[0], what, err, lastLines(stderr.Bytes(), 8))
	}
	return stdout.Bytes(), nil
}

func (c *dockerCLI) run(ctx context.Context, args ...string) ([]byte, error) {
	return runCmd(c.command(ctx, []string{c.bin}, args...))
}

// psRow is one container as `docker ps` lists it, with amserver's labels.
type psRow struct {
	ID, Names, State, Status string
	Assignment, Bundle, Job  string
	Project, Service, Spec   string
}

// psFormat asks docker ps for exactly the labels needed, each JSON-quoted:
// the plain Labels column joins them with commas, which values may hold.
var psFormat = `{"ID":{{json .ID}},"Names":{{json .Names}},"State":{{json .State}},"Status":{{json .Status}}` +
	`,"Assignment":{{json (.Label "` + labelAssignment + `")}},"Bundle":{{json (.Label "` + labelBundle + `")}}` +
	`,"Job":{{json (.Label "` + labelJob + `")}},"Project":{{json (.Label "` + labelProject + `")}}` +
	`,"Service":{{json (.Label "` + labelService + `")}},"Spec":{{json (.Label "` + labelSpec + `")}}}`

// ps lists every container (running or not) matching all the filters.
func (c *dockerCLI) ps(ctx context.Context, filters ...string) ([]psRow, error) {
	args := []string{"ps", "-a", "--no-trunc", "--format", psFormat}
	for _, f := range filters {
		args = append(args, "--filter", f)
	}
	out, err := c.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var rows []psRow
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var r psRow
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return rows, nil
		} else if err != nil {
			return nil, fmt.Errorf("docker ps output: %w", err)
		}
		rows = append(rows, r)
	}
}

var exitStatus = regexp.MustCompile(`^(?:Exited|Restarting) \((-?\d+)\)`)

// exitCode reads a stopped or restarting container's last exit code from
// its ps status ("Exited (3) 2 seconds ago").
func exitCode(status string) int {
	m := exitStatus.FindStringSubmatch(status)
	if m == nil {
		return -1
	}
	code, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return code
}

// logsTail is a container's last n lines of output, both streams.
func (c *dockerCLI) logsTail(ctx context.Context, id string, n int) string {
	cmd := c.command(ctx, []string{c.bin}, "logs", "--tail", strconv.Itoa(n), id)
	out, _ := cmd.CombinedOutput()
	return lastLines(out, n)
}

// oomKilled reports whether the kernel's OOM killer ended a container (a
// failed inspect says no: the message only loses its note).
func (c *dockerCLI) oomKilled(ctx context.Context, id string) bool {
	out, err := c.run(ctx, "inspect", "--format", "{{.State.OOMKilled}}", id)
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// follow copies a container's output into the writers until the container
// stops or ctx ends; since (RFC 3339) skips what was copied before.
func (c *dockerCLI) follow(ctx context.Context, id, since string, stdout, stderr io.Writer) error {
	args := []string{"logs", "--follow"}
	if since != "" {
		args = append(args, "--since", since)
	}
	cmd := c.command(ctx, []string{c.bin}, append(args, id)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// removeByLabel removes every container and network carrying the label
// (key=value), and every such volume when volumes is set: what a compose
// down leaves behind, or does not get to when the project's files are gone.
func (c *dockerCLI) removeByLabel(ctx context.Context, label string, volumes bool) error {
	ids, err := c.run(ctx, "ps", "-aq", "--no-trunc", "--filter", "label="+label)
	if err != nil {
		return err
	}
	if f := strings.Fields(string(ids)); len(f) > 0 {
		if _, err := c.run(ctx, append([]string{"rm", "-f", "-v"}, f...)...); err != nil {
			return err
		}
	}
	kinds := []string{"network"}
	if volumes {
		kinds = append(kinds, "volume")
	}
	for _, kind := range kinds {
		out, err := c.run(ctx, kind, "ls", "-q", "--filter", "label="+label)
		if err != nil {
			return err
		}
		if f := strings.Fields(string(out)); len(f) > 0 {
			if _, err := c.run(ctx, append([]string{kind, "rm"}, f...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// imagePresent is nil when the image is on this node: amserver never
// pulls (there is no registry), so a missing image is the operator's to
// build.
func (c *dockerCLI) imagePresent(ctx context.Context, image string) error {
	if _, err := c.run(ctx, "image", "inspect", "--format", "{{.Id}}", image); err != nil {
		return fmt.Errorf("image %q is not on this node (amserver never pulls: build or load it here): %w", image, err)
	}
	return nil
}
