package worker

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/amserver/amserver/api"
)

// envVar is one variable handed to a workload.
type envVar struct{ Name, Value string }

// stopDateTimeTag is the reserved tag the servers set from a launch's
// stopDateTime (DESIGN §2.3).
const stopDateTimeTag = "__stopDateTime"

// envStopDateTime is where a workload finds its stop instant (RFC 3339).
// It is the one reserved tag projected, under a name of its own rather than
// AMSERVER_TAG___STOPDATETIME: the workload may want to wind down before
// it is stopped. Other "__" tags are the servers' business and not passed.
const envStopDateTime = "AMSERVER_STOP_DATETIME"

// identityEnv is what every workload learns about itself, whatever its
// runtime: its bundle (or node service), job, role, assignment, node and
// the bundle's epoch (the fencing token).
func identityEnv(a api.Assignment) []envVar {
	env := []envVar{
		{"AMSERVER_BUNDLE", a.BundleID}, {"AMSERVER_JOB", a.Job}, {"AMSERVER_ROLE", a.Role},
		{"AMSERVER_ASSIGNMENT", a.ID}, {"AMSERVER_NODE", a.NodeID},
		{"AMSERVER_EPOCH", strconv.FormatUint(a.Epoch, 10)},
	}
	if a.ServiceID != "" {
		env = append(env, envVar{"AMSERVER_SERVICE", a.ServiceID})
	}
	return env
}

// tagEnv projects a template launch's tags as AMSERVER_TAG_<NAME>: the name
// upper-cased, every character other than a letter, digit or "_" turned
// into "_". Tags are read in key order and a name already taken is
// skipped, with a warning. "__" tags are not projected, except the stop
// instant (envStopDateTime).
func tagEnv(l api.Launch) (env []envVar, warnings []string) {
	taken := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(l.Tags)) {
		if strings.HasPrefix(k, "__") || k == "" {
			continue
		}
		name := api.TagEnvName(k)
		if prev, ok := taken[name]; ok {
			warnings = append(warnings, fmt.Sprintf("tag %q projects to %s like tag %q: skipped", k, name, prev))
			continue
		}
		taken[name] = k
		env = append(env, envVar{name, l.Tags[k]})
	}
	stop := l.StopDateTime
	if stop == "" {
		stop = l.Tags[stopDateTimeTag]
	}
	if stop != "" {
		env = append(env, envVar{envStopDateTime, stop})
	}
	return env, warnings
}

var validEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// templateEnv is a template launch's variables: its parameters, and the
// identity and tags (ident). A parameter that cannot be passed as named is
// an error; a tag that cannot is a warning.
func templateEnv(a api.Assignment) (params, ident []envVar, warnings []string, err error) {
	for _, k := range slices.Sorted(maps.Keys(a.Launch.Parameters)) {
		switch {
		case !validEnvName.MatchString(k):
			return nil, nil, nil, fmt.Errorf("parameter %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
		case api.ReservedParameter(k): // admitted by an older server
			return nil, nil, nil, fmt.Errorf("parameter %q uses a reserved name (%s)", k, api.ReservedParameterNames())
		}
		params = append(params, envVar{k, a.Launch.Parameters[k]})
	}
	tags, warnings := tagEnv(a.Launch)
	return params, append(identityEnv(a), tags...), warnings, nil
}

// dotenvLine writes one variable for a compose .env (api.DotenvValue).
func dotenvLine(v envVar) (string, error) {
	val, err := api.DotenvValue(v.Value)
	if err != nil {
		return "", fmt.Errorf("%s: %w", v.Name, err)
	}
	return v.Name + "=" + val, nil
}

// dotenv renders a compose project's .env: the parameters, each of which
// must be written faithfully, then the identity and tags, of which a value
// that cannot be is left out with a warning.
func dotenv(params, ident []envVar) (body []byte, warnings []string, err error) {
	var b strings.Builder
	b.WriteString("# Written by amserver for this assignment; rewritten on every deploy.\n")
	var errs []error
	for i, v := range append(append([]envVar(nil), params...), ident...) {
		line, err := dotenvLine(v)
		switch {
		case err != nil && i < len(params):
			errs = append(errs, fmt.Errorf("parameter %w", err))
			continue
		case err != nil:
			warnings = append(warnings, err.Error()+": left out of .env")
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return []byte(b.String()), warnings, errors.Join(errs...)
}

// onTemplateEnv puts the lines of a template's own .env (base) before
// amserver's (ours): docker-compose v1 and v2 both let a later line of a
// .env override an earlier one, so the template's values are defaults
// that the launch's parameters override, and a template cannot set the
// identity amserver gives the stack. A line that sets a reserved name
// (COMPOSE_*, DOCKER_*, PATH...: what compose itself reads, refused as
// parameters for that reason) is dropped, and named in dropped.
func onTemplateEnv(base, ours []byte) (out []byte, dropped []string) {
	if len(base) == 0 {
		return ours, nil
	}
	out = []byte("# The template's .env, overridden by what follows it.\n")
	for _, line := range strings.SplitAfter(string(base), "\n") {
		if m := envAssignment.FindStringSubmatch(line); m != nil && api.ReservedParameter(m[1]) {
			dropped = append(dropped, m[1])
			line = "# dropped by amserver (a reserved name): " + m[1] + "\n"
		}
		out = append(out, line...)
	}
	if out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, ours...), dropped
}

// envAssignment matches a .env line that sets a variable, capturing its name.
var envAssignment = regexp.MustCompile(`^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=`)
