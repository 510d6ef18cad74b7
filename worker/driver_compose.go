package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// overrideFile is the compose file amserver adds to a stack: labels,
// identity environment and pull_policy for every service.
const overrideFile = ".amserver.override.yaml"

// composeBackend runs a productTemplate launch of a compose template as
// one compose project per assignment (DESIGN §2.3a): the archive fetched
// by digest and unpacked into the assignment's directory, the launch's
// parameters, tags and identity in the project's .env, and an override
// file that labels every container and keeps compose from pulling.
type composeBackend struct {
	cli       *dockerCLI
	compose   composeCLI
	templates *templateCache
	logger    *slog.Logger
}

func (b *composeBackend) describe(r psRow) string  { return "service " + r.Service }
func (b *composeBackend) logPrefix(r psRow) string { return r.Service + " | " }

func (b *composeBackend) deploy(ctx context.Context, a api.Assignment, spec, name, dir string) error {
	if a.Launch.Kind != api.LaunchProductTemplate {
		return permanent(errors.New("the compose runtime runs productTemplate launches only"))
	}
	archive, digest, err := b.templates.get(ctx, a.Launch.Ref)
	if err != nil {
		return err
	}
	changed, err := materialize(archive, digest, dir, artifact.RuntimeCompose)
	if err != nil {
		return err
	}
	stack := filepath.Join(dir, stackDir)
	file, services, err := readCompose(stack)
	if err != nil {
		return permanent(err)
	}
	base, _, err := artifact.RootFile(archive, ".env")
	if err != nil {
		return permanent(err)
	}
	if err := b.writeProjectFiles(a, spec, stack, services, base); err != nil {
		return err
	}
	if b.compose.major == 1 {
		// docker-compose v1 ignores pull_policy: check the images first.
		if err := b.checkImages(ctx, name, stack, file); err != nil {
			return err
		}
	}
	args := []string{"up", "-d", "--no-build", "--remove-orphans"}
	if changed {
		args = append(args, "--force-recreate") // new files under unchanged service configs
	}
	if _, err := b.run(ctx, name, stack, file, args...); err != nil {
		return fmt.Errorf("compose up: %w", err)
	}
	return nil
}

// writeProjectFiles writes the project's .env and the override file. The
// .env starts with the template's own (base, its defaults), so that the
// launch's parameters and the identity written after it override them.
func (b *composeBackend) writeProjectFiles(a api.Assignment, spec, stack string, services []string, base []byte) error {
	params, ident, warnings, err := templateEnv(a)
	if err != nil {
		return permanent(err)
	}
	env, more, err := dotenv(params, ident)
	if err != nil {
		return permanent(err)
	}
	env, dropped := onTemplateEnv(base, env)
	for _, name := range dropped {
		more = append(more, "the template's .env sets "+name+", a reserved name: dropped")
	}
	for _, w := range append(warnings, more...) {
		b.logger.Warn("launch variable not passed", "assignment", a.ID, "warning", w)
	}
	if err := writeFresh(filepath.Join(stack, ".env"), env, 0o600); err != nil {
		return fmt.Errorf("write .env: %w", err)
	}
	labels := containerLabels(a, api.RuntimeCompose, spec)
	override, err := composeOverride(services, labels, ident, b.compose.major >= 2, a.MemoryLimitMiB)
	if err != nil {
		return err
	}
	if err := writeFresh(filepath.Join(stack, overrideFile), override, 0o640); err != nil {
		return fmt.Errorf("write compose override: %w", err)
	}
	return nil
}

// containerLabels are the labels of every container of an assignment.
func containerLabels(a api.Assignment, runtime, spec string) map[string]string {
	return map[string]string{
		labelBundle: a.BundleID, labelJob: a.Job, labelAssignment: a.ID, labelNode: a.NodeID,
		labelRuntime: runtime, labelSpec: spec,
	}
}

// composeOverride labels every service's containers, gives them the
// identity and tag variables (so that a stack sees its role and epoch
// without wiring them) and, where compose honours it (v2), forbids pulls.
// A job's memory limit becomes every service's mem_limit (and
// memswap_limit, so swap does not extend it): compose has no limit for a
// whole project, so each container of the stack is held to the job's
// limit, and a stack of N services may use up to N times it. Compose
// interpolates override files too: "$" is written "$$".
func composeOverride(services []string, labels map[string]string, ident []envVar, pullPolicy bool, memoryMiB int64) ([]byte, error) {
	esc := strings.NewReplacer("$", "$$")
	lab := map[string]string{}
	for k, v := range labels {
		lab[k] = esc.Replace(v)
	}
	env := map[string]string{}
	for _, v := range ident {
		env[v.Name] = esc.Replace(v.Value)
	}
	svcs := map[string]any{}
	for _, s := range services {
		svc := map[string]any{"labels": lab, "environment": env}
		if pullPolicy {
			svc["pull_policy"] = "never"
		}
		if memoryMiB > 0 {
			limit := strconv.FormatInt(memoryMiB, 10) + "m"
			svc["mem_limit"], svc["memswap_limit"] = limit, limit
		}
		svcs[s] = svc
	}
	out, err := yaml.Marshal(map[string]any{"services": svcs})
	if err != nil {
		return nil, fmt.Errorf("compose override: %w", err)
	}
	return out, nil
}

// readCompose finds the stack's compose file and its service names.
func readCompose(stack string) (file string, services []string, err error) {
	for _, name := range []string{"compose.yaml", "compose.yml", "docker-compose.yml"} {
		p := filepath.Join(stack, name)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			file = name
			break
		}
	}
	if file == "" {
		return "", nil, errors.New("the template has no compose file at its root")
	}
	raw, err := os.ReadFile(filepath.Join(stack, file))
	if err != nil {
		return "", nil, err
	}
	var doc struct {
		Services map[string]any `json:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", nil, fmt.Errorf("the compose file: %w", err)
	}
	for s := range doc.Services {
		services = append(services, s)
	}
	if len(services) == 0 {
		return "", nil, errors.New("the compose file names no services")
	}
	return file, services, nil
}

// run calls compose on the project with its two files.
func (b *composeBackend) run(ctx context.Context, name, stack, file string, args ...string) ([]byte, error) {
	base := []string{"-p", name, "-f", file, "-f", overrideFile}
	cmd := b.cli.command(ctx, b.compose.argv, append(base, args...)...)
	cmd.Dir = stack
	return runCmd(cmd)
}

// checkImages refuses a stack whose images are not all on this node.
func (b *composeBackend) checkImages(ctx context.Context, name, stack, file string) error {
	out, err := b.run(ctx, name, stack, file, "config")
	if err != nil {
		return permanent(fmt.Errorf("compose config: %w", err))
	}
	var cfg struct {
		Services map[string]struct {
			Image string `json:"image"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		return fmt.Errorf("compose config output: %w", err)
	}
	for svc, s := range cfg.Services {
		if s.Image == "" {
			return permanent(fmt.Errorf("service %s has no image: amserver neither builds nor pulls", svc))
		}
		if err := b.cli.imagePresent(ctx, s.Image); err != nil {
			return err
		}
	}
	return nil
}

// teardown brings the project down; whatever is left (or everything, when
// the project's files are gone) is removed by its compose label. Its
// volumes go too, unless keepVolumes (a restart: the stack comes up again
// on them).
func (b *composeBackend) teardown(ctx context.Context, name, dir string, keepVolumes bool) error {
	stack := filepath.Join(dir, stackDir)
	if file, _, err := readCompose(stack); err == nil {
		args := []string{"down", "--remove-orphans", "-t", "10"}
		if !keepVolumes {
			args = append(args, "-v")
		}
		if _, err := b.run(ctx, name, stack, file, args...); err != nil {
			b.logger.Warn("compose down failed; removing by label", "project", name, "err", err)
		}
	}
	return b.cli.removeByLabel(ctx, labelProject+"="+name, !keepVolumes)
}
