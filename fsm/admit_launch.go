package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/amserver/amserver/api"
)

// Admission-only launch checks. Validate (the API, before a command goes
// to Raft) and AdmitService run them; the FSM's apply does not. Apply
// validates every entry again, entries committed by an older server
// included: a rule added later must not make a replica that replays them
// refuse what the others accepted (their states would part), so rules
// that only protect the workload from a launch that could never start live
// here, at the door.

// admitLaunch bounds what JSON decodes a launch to (its job: command,
// image, env) as launchLimit bounds the older fields, and refuses what no
// process can be started with: NUL anywhere, an env name that is empty or
// holds "=" (exec would set another variable than asked; docker refuses),
// or one in the AMSERVER_ namespace the worker sets (docker refuses it,
// exec let it override the workload's identity).
func admitLaunch(l Launch) (code, msg string) {
	if code, msg := envNames(l.Env); code != "" {
		return code, msg
	}
	if code, msg := parameterNames(l.Parameters); code != "" {
		return code, msg
	}
	j := l.Job
	if j == nil {
		return "", ""
	}
	return firstProblem(
		func() (string, string) { return commandEnvLimit(j.Command, j.Env) },
		func() (string, string) { return envNames(j.Env) },
		func() (string, string) { return argLimit("launch image", j.Image) },
	)
}

func commandEnvLimit(command []string, env map[string]string) (code, msg string) {
	return launchLimit(Launch{Command: command, Env: env})
}

// reservedEnvPrefix names the variables a worker gives every workload.
const reservedEnvPrefix = "AMSERVER_"

func envNames(env map[string]string) (code, msg string) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if k == "" || strings.Contains(k, "=") {
			return CodeInvalidRequirement, fmt.Sprintf("launch env name %q must not be empty or hold \"=\"", clip(k))
		}
		if strings.HasPrefix(strings.ToUpper(k), reservedEnvPrefix) {
			return CodeInvalidRequirement, fmt.Sprintf("launch env name %q: %s* names are the worker's (the job's identity, tags and devices)",
				clip(k), reservedEnvPrefix)
		}
	}
	return "", ""
}

// parameterNames refuses a template parameter whose name is the worker's
// or compose's (api.ReservedParameter): the worker would refuse to deploy
// it, and the bundle would hold its reservation for a job that never runs.
func parameterNames(params map[string]string) (code, msg string) {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if api.ReservedParameter(k) {
			return CodeInvalidParameterKey, fmt.Sprintf("parameter %q uses a reserved name (%s): the worker and compose set those",
				clip(k), api.ReservedParameterNames())
		}
	}
	return "", ""
}

// admitJobLaunches adds a finding, under the job's name, for each job
// whose launch admitLaunch refuses, whose runtime.oneOf leaves out its
// launch's runtime, and, with a state to find templates in, for each
// compose template parameter no .env can hold.
func admitJobLaunches(f *Findings, spec *BundleSpec, st *State) {
	c := collector{out: *f}
	for i := range spec.Jobs {
		j := &spec.Jobs[i]
		if code, msg := admitLaunch(j.Launch); code != "" {
			c.errorf(j.Name, code, "%s", msg)
		}
		var lookup templateRuntimes
		if st != nil && st.txn != nil {
			lookup = st.TemplateRuntime
			composeParameters(&c, j, lookup)
		}
		runtimeCoversLaunch(&c, j, lookup)
	}
	*f = c.out
}

// runtimeCoversLaunch refuses a runtime.oneOf that leaves out the runtime
// the job's launch runs with (a template's, a legacy driver's): placement
// goes by oneOf, but the worker runs the launch with its own runtime, so
// the job could land on a node that cannot run it (a compose stack on an
// exec-only node). A launch that needs nothing (driver none) takes any.
func runtimeCoversLaunch(c *collector, j *Job, lookup templateRuntimes) {
	if j.Runtime == nil || len(j.Runtime.OneOf) == 0 {
		return
	}
	runs := LaunchRuntime(&j.Launch, lookup)
	need, ok := ParseRuntime(runs)
	if !ok || JobRuntimeNeed(j, lookup)&need != 0 {
		return
	}
	c.errorf(j.Name, CodeUnknownRuntime, "runtime.oneOf [%s] leaves out %s, the runtime its launch runs with: the worker would run it with %s on a node that may not offer it (list %s, or leave runtime out)",
		j.Runtime.OneOf, runs, runs, runs)
}

// composeParameters refuses a compose template's parameter whose value the
// worker cannot write to the project's .env (api.DotenvValue): it would
// refuse to deploy the stack, and the bundle would hold its reservation
// for a job that never runs. Other runtimes take any value.
func composeParameters(c *collector, j *Job, lookup templateRuntimes) {
	l := &j.Launch
	if l.Kind != api.LaunchProductTemplate || lookup(l.Ref) != api.RuntimeCompose {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(l.Parameters)) {
		if _, err := api.DotenvValue(l.Parameters[k]); err != nil {
			c.errorf(j.Name, CodeInvalidRequirement, "parameter %s: %v (template %s runs with compose, which reads parameters from a .env)",
				k, err, l.Ref)
		}
	}
}

// AdmitService is ValidateService with the admission-only launch checks;
// the API calls it before a node service goes to Raft.
func AdmitService(s *NodeService) error {
	if err := ValidateService(s); err != nil {
		return err
	}
	if code, msg := admitLaunch(s.Launch); code != "" {
		return findingErr(code, msg)
	}
	return nil
}
