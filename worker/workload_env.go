package worker

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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

// safeUnquoted are values written to a .env as they are.
var safeUnquoted = regexp.MustCompile(`^[A-Za-z0-9_./:@,+%=-]+$`)

// dotenvLine writes one variable for a compose .env so that docker-compose
// v1 (python-dotenv) and v2 (compose-go) read back the same value. Their
// common ground is narrow: both keep a single-quoted value literally
// (newlines and "$" included) except that v1 still expands "${...}" and
// both treat a backslash before a quote as an escape; both decode \" and
// \n in double quotes but differ on "$" there. So: plain values unquoted,
// others single-quoted, values with a quote and no "$" or backslash
// double-quoted; what is left ("${", a quote with "$" or "\", a
// backslash before a backslash or at the end, NUL, CR, invalid UTF-8)
// cannot be written faithfully and is refused.
func dotenvLine(v envVar) (string, error) {
	val := v.Value
	switch {
	case !utf8.ValidString(val) || strings.ContainsAny(val, "\x00\r"):
		return "", fmt.Errorf("%s: the value holds NUL, CR or invalid UTF-8", v.Name)
	case strings.Contains(val, "${"):
		return "", fmt.Errorf("%s: the value holds \"${\", which docker-compose v1 expands in a .env whatever the quoting", v.Name)
	case safeUnquoted.MatchString(val):
		return v.Name + "=" + val, nil
	case !strings.Contains(val, "'") && !badBackslash(val):
		return v.Name + "='" + val + "'", nil
	case !strings.ContainsAny(val, `$\`):
		q := strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(val)
		return v.Name + `="` + q + `"`, nil
	}
	return "", fmt.Errorf("%s: a value with a quote and \"$\" or a backslash cannot be written to a .env both compose versions read alike", v.Name)
}

// badBackslash is true when a backslash would escape something inside
// single quotes: another backslash, or the closing quote.
func badBackslash(v string) bool {
	return strings.Contains(v, `\\`) || strings.HasSuffix(v, `\`)
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
