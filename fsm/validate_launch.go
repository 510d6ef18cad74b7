package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// Validation codes of launches and runtimes (DESIGN §3.8).
const (
	CodeInvalidTemplateRef   = "invalidTemplateRef"
	CodeUnknownTemplate      = "unknownTemplate"
	CodeInvalidParameterKey  = "invalidParameterKey"
	CodeUnknownRuntime       = "unknownRuntime"
	CodeUnsatisfiableRuntime = "unsatisfiableRuntime"
	// CodeTagCollision warns of tags that reach the workload as one
	// variable (api.TagEnvName): it sees only the first.
	CodeTagCollision = api.FindingTagCollision
)

// Limits on a launch: its parameters and tags travel in every assignment
// and become a stack's .env.
const (
	maxParameters      = 128
	maxParameterKeyLen = 128
	maxParameterValue  = 4096
	maxLaunchTags      = 64
)

// checkLaunch checks a launch's shape: one of the union's kinds, nothing of
// the other (a mixed launch), and each kind's own rules. Template refs are
// checked against the state by checkTemplate.
func checkLaunch(c *collector, job string, l *Launch) {
	n := *l // as stored: Validate may see a spec Normalize has not seen,
	// so a user's reserved tags, which Normalize drops, count for nothing
	n.Tags = WithoutReservedTags(n.Tags)
	NormalizeLaunch(&n)
	l = &n
	bad := func(format string, args ...any) { c.errorf(job, CodeInvalidRequirement, format, args...) }
	product := templateFields(l)
	switch l.Kind {
	case "":
		if product || l.Job != nil {
			bad("launch kind is required: %s or %s", api.LaunchProductTemplate, api.LaunchLegacy)
		}
	case api.LaunchLegacy:
		if product || oldShape(l) && l.Job != nil {
			bad("a legacy launch holds only job {driver, command, image, env}: it mixes the launch's shapes")
			return
		}
		if l.Job != nil {
			checkLegacyJob(c, job, l.Job)
		}
	case api.LaunchProductTemplate:
		if l.Job != nil || oldShape(l) {
			bad("a productTemplate launch has no job, driver, command or env: it mixes the launch's shapes")
			return
		}
		checkTemplateLaunch(c, job, l)
	default:
		bad("launch kind %q must be %s or %s", l.Kind, api.LaunchProductTemplate, api.LaunchLegacy)
	}
}

func checkLegacyJob(c *collector, job string, j *LegacyJob) {
	bad := func(format string, args ...any) { c.errorf(job, CodeInvalidRequirement, format, args...) }
	switch j.Driver {
	case "", DriverNone:
	case DriverExec:
		if len(j.Command) == 0 || j.Command[0] == "" {
			bad("launch driver exec needs a command")
		}
		if j.Image != "" {
			bad("launch driver exec runs a command, not an image")
		}
	case api.DriverDocker:
		if strings.TrimSpace(j.Image) == "" {
			bad("launch driver docker needs an image")
		}
	default:
		bad("launch driver %q must be exec, docker or none", j.Driver)
	}
}

// checkTemplateLaunch checks a template launch's ref syntax, parameters,
// tags and times.
func checkTemplateLaunch(c *collector, job string, l *Launch) {
	bad := func(format string, args ...any) { c.errorf(job, CodeInvalidRequirement, format, args...) }
	if l.Ref == "" {
		c.errorf(job, CodeInvalidTemplateRef, "a productTemplate launch needs a ref: \"name\" or \"name@sha256:<hex>\"")
	} else if _, _, err := ParseTemplateRef(l.Ref); err != nil {
		c.errorf(job, CodeInvalidTemplateRef, "ref %q: %v", l.Ref, err)
	}
	if len(l.Parameters) > maxParameters {
		bad("%d parameters, at most %d allowed", len(l.Parameters), maxParameters)
	}
	for _, k := range slices.Sorted(maps.Keys(l.Parameters)) {
		if !envName(k) || len(k) > maxParameterKeyLen {
			c.errorf(job, CodeInvalidParameterKey, "parameter %q must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes): it becomes a .env name", k, maxParameterKeyLen)
		}
		checkEnvValue(c, job, "parameter "+k, l.Parameters[k], maxParameterValue)
	}
	// Reserved "__" tags are stripped, never refused (StripReservedTags);
	// the server's own (__stopDateTime) is checked as the time it holds.
	tags := WithoutReservedTags(l.Tags)
	if len(tags) > maxLaunchTags {
		bad("%d tags, at most %d allowed", len(tags), maxLaunchTags)
	}
	seen := map[string]string{} // variable → the tag the workload sees it as
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if k == "" || len(k) > maxKeyLen {
			bad("tag %q must be 1..%d bytes", k, maxKeyLen)
		}
		checkEnvValue(c, job, "tag "+k, tags[k], maxLabelValueLen)
		if v := api.TagEnvName(k); seen[v] != "" {
			c.warnf(job, CodeTagCollision, "tags %q and %q both reach the workload as %s: it sees only %q's value", seen[v], k, v, seen[v])
		} else {
			seen[v] = k
		}
	}
	start, okStart := checkTime(c, job, "startDateTime", l.StartDateTime)
	stop, okStop := checkTime(c, job, "stopDateTime", l.StopDateTime)
	if okStart && okStop && l.StartDateTime != "" && l.StopDateTime != "" && !stop.After(start) {
		bad("stopDateTime must be after startDateTime")
	}
}

// jobStopsBeforeStart reports a job whose own times are reversed, which
// its own finding explains.
func jobStopsBeforeStart(spec *BundleSpec) bool {
	for i := range spec.Jobs {
		l := &spec.Jobs[i].Launch
		if start, stop := launchTime(l.StartDateTime), launchTime(l.StopDateTime); start != 0 && stop != 0 && stop <= start {
			return true
		}
	}
	return false
}

// checkEnvValue refuses what a .env line cannot hold.
func checkEnvValue(c *collector, job, what, v string, limit int) {
	switch {
	case len(v) > limit:
		c.errorf(job, CodeInvalidRequirement, "%s is %d bytes, at most %d allowed", what, len(v), limit)
	case strings.ContainsAny(v, "\n\r\x00"):
		c.errorf(job, CodeInvalidRequirement, "%s holds a newline or NUL, which a .env value cannot", what)
	}
}

func checkTime(c *collector, job, what, v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		c.errorf(job, CodeInvalidRequirement, "%s %q is not an RFC 3339 time", what, v)
		return time.Time{}, false
	}
	return t, true
}

// envName reports whether k matches [A-Za-z_][A-Za-z0-9_]*.
func envName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case i > 0 && c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return true
}

// checkRuntime checks a job's runtime.oneOf names.
func checkRuntime(c *collector, j *Job) {
	if j.Runtime == nil {
		return
	}
	if len(j.Runtime.OneOf) == 0 {
		c.errorf(j.Name, CodeUnknownRuntime, "runtime.oneOf needs at least one runtime (or leave runtime out: the launch implies one)")
	}
	for _, name := range j.Runtime.OneOf {
		if _, ok := ParseRuntime(name); !ok {
			c.errorf(j.Name, CodeUnknownRuntime, "runtime %q is not one of %s", name, knownRuntimes)
		}
	}
}

// knownRuntimes names the runtimes for messages.
const knownRuntimes = "exec, wasm (wasmtime), docker (container), compose, pve-vm, pve-ct"

// checkTemplate checks that a template launch's ref names a kept version.
func (v *jobValidator) checkTemplate(j *Job) {
	l := &j.Launch
	if v.st == nil || l.Kind != api.LaunchProductTemplate {
		return
	}
	name, digest, err := ParseTemplateRef(l.Ref)
	if err != nil {
		return // reported by checkLaunch
	}
	t := v.st.Template(name)
	switch {
	case t == nil:
		v.c.errorf(j.Name, CodeUnknownTemplate, "template %q is not kept by the cluster (push it first)", name)
	case digest != "":
		if _, ok := t.Version(digest); !ok {
			v.c.errorf(j.Name, CodeUnknownTemplate, "template %q keeps no version %s", name, digest)
		}
	}
}

// checkNodeRuntimes checks the runtimes and kind a node or an instance type
// advertises.
func checkNodeRuntimes(what string, runtimes []string, kind string) error {
	if !oneOf(kind, "", api.NodeKindProxmox) {
		return invalidf("%s kind %q must be empty or %s", what, kind, api.NodeKindProxmox)
	}
	if len(runtimes) > maxRuntimes {
		return invalidf("%s lists %d runtimes, at most %d allowed", what, len(runtimes), maxRuntimes)
	}
	for _, name := range runtimes {
		r, ok := ParseRuntime(name)
		if !ok {
			return invalidf("%s runtime %q is not one of %s", what, name, knownRuntimes)
		}
		if r&proxmoxOnly != 0 && kind != api.NodeKindProxmox {
			return invalidf("%s runtime %q runs only on kind %s", what, name, api.NodeKindProxmox)
		}
	}
	return nil
}

const maxRuntimes = 16

// runtimeShortfall describes a need no profile runtime set meets.
func runtimeShortfall(need RuntimeSet) shortfall {
	return shortfall{CodeUnsatisfiableRuntime, fmt.Sprintf("runtime %s", strings.Join(need.Names(), " or "))}
}
