package worker

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
)

// runtimeNone runs nothing (a legacy launch with driver none).
const runtimeNone = api.DriverNone

// runtimeOf is the runtime an assignment runs with: the one the servers
// resolved, else the one its legacy launch names. Names are matched
// case-insensitively with the aliases placement knows (DESIGN §3.1). ""
// means it cannot be told (a template launch the servers did not resolve).
func runtimeOf(a api.Assignment) string {
	rt := strings.ToLower(strings.TrimSpace(a.Runtime))
	if rt == "" && a.Launch.Kind != api.LaunchProductTemplate {
		rt = strings.ToLower(legacyJob(a.Launch).Driver)
		if rt == "" {
			rt = runtimeNone
		}
	}
	switch rt {
	case "wasmtime":
		return api.RuntimeWasm
	case "container":
		return api.RuntimeDocker
	}
	return rt
}

// legacyJob is what a legacy launch runs, in either shape: the union's
// job, or the older driver/command/env fields when a launch was built
// without going through JSON (Normalize moves them on input).
func legacyJob(l api.Launch) api.LegacyJob {
	if l.Job != nil {
		return *l.Job
	}
	return api.LegacyJob{Driver: l.Driver, Command: l.Command, Env: l.Env}
}

// DetectRuntimes says what this node can run: exec always, wasm always
// (wazero is built in), docker when the Docker daemon answers, compose
// when it does and `docker compose` or `docker-compose` works too. The
// agent calls it for the inventory unless --runtime flags name the
// runtimes; it takes a few seconds at most.
func DetectRuntimes(ctx context.Context) []string {
	out := []string{api.RuntimeExec, api.RuntimeWasm}
	if _, err := exec.LookPath("docker"); err != nil {
		return out
	}
	if !dockerAnswers(ctx) {
		return out
	}
	out = append(out, api.RuntimeDocker)
	if _, ok := composeCommand(ctx); ok {
		out = append(out, api.RuntimeCompose)
	}
	return out
}

// dockerAnswers is true when the Docker daemon answers the CLI.
func dockerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").Run() == nil
}

// composeCLI is the compose command line to run and its major version.
type composeCLI struct {
	argv  []string // e.g. [/usr/bin/docker compose] or [/usr/bin/docker-compose]
	major int      // 1: the Python docker-compose, which ignores pull_policy
}

// composeFound caches what composeCommand found: asking docker-compose v1
// its version starts a Python interpreter, and every worker of a dev
// cluster asks.
var composeFound struct {
	sync.Mutex
	cli *composeCLI
}

// composeCommand finds compose: the v2 plugin when it is there, else the
// standalone docker-compose (v1 or v2). A success is remembered for the
// life of the process.
func composeCommand(ctx context.Context) (composeCLI, bool) {
	composeFound.Lock()
	defer composeFound.Unlock()
	if composeFound.cli != nil {
		return *composeFound.cli, true
	}
	cli, ok := findCompose(ctx)
	if ok {
		composeFound.cli = &cli
	}
	return cli, ok
}

func findCompose(ctx context.Context) (composeCLI, bool) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, argv := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		bin, err := exec.LookPath(argv[0])
		if err != nil {
			continue
		}
		args := append(append([]string(nil), argv[1:]...), "version", "--short")
		out, err := exec.CommandContext(ctx, bin, args...).Output()
		if err != nil {
			continue
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major := 2
		if strings.HasPrefix(v, "1.") {
			major = 1
		}
		return composeCLI{argv: append([]string{bin}, argv[1:]...), major: major}, true
	}
	return composeCLI{}, false
}
