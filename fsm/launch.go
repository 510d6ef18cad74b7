package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// Reserved tags (DESIGN §2.3): keys starting "__" belong to the server. A
// user's are stripped with a warning; __stopDateTime carries a template
// launch's stopDateTime to the worker.
const (
	ReservedTagPrefix = "__"
	TagStopDateTime   = "__stopDateTime"
)

// Launch kinds and the docker driver.
const (
	LaunchProductTemplate = api.LaunchProductTemplate
	LaunchLegacy          = api.LaunchLegacy
	DriverDocker          = api.DriverDocker
)

// CodeReservedTag is the warning for a stripped "__" tag.
const CodeReservedTag = "reservedTag"

// NormalizeLaunch puts a launch in its stored form: the older {driver,
// command, env} shape becomes a legacy launch, an empty launch is legacy
// none, a legacy job without a driver runs none, empty lists and maps are
// nil, and a template launch's stopDateTime is its __stopDateTime tag.
// Launches that reach the FSM from old log entries or snapshots pass here
// too, so every read shows the union's form. It never writes through the
// launch's pointers or maps: they may be shared with stored rows.
func NormalizeLaunch(l *Launch) {
	if len(l.Command) == 0 {
		l.Command = nil
	}
	if len(l.Env) == 0 {
		l.Env = nil
	}
	l.Normalize()
	if len(l.Parameters) == 0 {
		l.Parameters = nil
	}
	if len(l.Tags) == 0 {
		l.Tags = nil
	}
	if l.Kind == "" && l.Job != nil && !oldShape(l) && !templateFields(l) {
		l.Kind = api.LaunchLegacy // a job alone can only be a legacy launch
	}
	switch {
	case isZeroLaunch(l):
		*l = Launch{Kind: api.LaunchLegacy, Job: &LegacyJob{Driver: DriverNone}}
	case l.Kind == api.LaunchLegacy && l.Job == nil && !oldShape(l):
		l.Job = &LegacyJob{Driver: DriverNone}
	case l.Kind == api.LaunchLegacy && l.Job != nil && l.Job.Driver == "":
		j := *l.Job
		j.Driver = DriverNone
		l.Job = &j
	}
	if l.Job != nil && (len(l.Job.Command) == 0 && l.Job.Command != nil || len(l.Job.Env) == 0 && l.Job.Env != nil) {
		j := *l.Job
		j.Command, j.Env = nilIfEmpty(j.Command), nilMapIfEmpty(j.Env)
		l.Job = &j
	}
	if l.Kind == api.LaunchProductTemplate && l.StopDateTime != "" && l.Tags[TagStopDateTime] != l.StopDateTime {
		l.Tags = maps.Clone(l.Tags)
		if l.Tags == nil {
			l.Tags = map[string]string{}
		}
		l.Tags[TagStopDateTime] = l.StopDateTime
	}
}

func isZeroLaunch(l *Launch) bool {
	return l.Kind == "" && l.Job == nil && !templateFields(l) && !oldShape(l)
}

// templateFields reports fields only a template launch has.
func templateFields(l *Launch) bool {
	return l.Ref != "" || len(l.Parameters) > 0 || len(l.Tags) > 0 || l.StartDateTime != "" || l.StopDateTime != ""
}

// oldShape reports fields of the older shape left beside the union's: a
// mixed launch, which validation refuses.
func oldShape(l *Launch) bool { return l.Driver != "" || len(l.Command) > 0 || len(l.Env) > 0 }

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilMapIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// StripReservedTags removes user tags whose keys start "__" from the
// bundle's tags and every launch's, and says which, as warnings (DESIGN
// §2.3: reserved keys are stripped, never an error). Normalize strips them
// too; the API calls this first to report them.
func StripReservedTags(spec *BundleSpec) []Finding {
	var out []Finding
	strip := func(job string, tags map[string]string) map[string]string {
		var kept map[string]string
		for _, k := range slices.Sorted(maps.Keys(tags)) { // findings must not depend on map order
			if !strings.HasPrefix(k, ReservedTagPrefix) {
				continue
			}
			if kept == nil {
				kept = maps.Clone(tags)
			}
			delete(kept, k)
			out = append(out, Finding{Code: CodeReservedTag, Job: job,
				Message: fmt.Sprintf("tag %q is reserved (keys starting %q) and was removed", k, ReservedTagPrefix)})
		}
		if kept == nil {
			return tags
		}
		return nilMapIfEmpty(kept)
	}
	spec.Tags = strip("", spec.Tags)
	for i := range spec.Jobs {
		l := &spec.Jobs[i].Launch
		l.Tags = strip(spec.Jobs[i].Name, l.Tags)
	}
	return out
}

// WithoutReservedTags returns tags without the server's "__" keys: what a
// reader of a bundle sees (workers see them in their assignments).
func WithoutReservedTags(tags map[string]string) map[string]string {
	var out map[string]string
	for k := range tags {
		if strings.HasPrefix(k, ReservedTagPrefix) {
			if out == nil {
				out = maps.Clone(tags)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return tags
	}
	return out
}

// digestPrefix starts a template digest: sha256 in lowercase hex.
const digestPrefix = "sha256:"

// ParseTemplateRef splits a ref, "name" or "name@sha256:<hex>"; digest is
// "" for a bare name.
func ParseTemplateRef(ref string) (name, digest string, err error) {
	name, digest, pinned := strings.Cut(ref, "@")
	if !validName(name) {
		return "", "", fmt.Errorf("template name %q must match %s", name, namePattern)
	}
	if pinned && !ValidDigest(digest) {
		return "", "", fmt.Errorf("template digest %q must be sha256:<64 lowercase hex digits>", digest)
	}
	return name, digest, nil
}

// ValidDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func ValidDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, digestPrefix)
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// launchTime parses a launch's RFC 3339 time; 0 when empty or malformed
// (validation refuses the latter).
func launchTime(s string) int64 {
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

// EffectiveStart is when the bundle may be placed: the latest of startAt
// and its jobs' startDateTime (a gang is placed together); 0 for now.
func (s *BundleSpec) EffectiveStart() int64 {
	start := s.StartAt
	for i := range s.Jobs {
		start = max(start, launchTime(s.Jobs[i].Launch.StartDateTime))
	}
	return start
}

// EffectiveStop is when the bundle's deletion starts: the earliest of
// stopAt and its jobs' stopDateTime; 0 for never.
func (s *BundleSpec) EffectiveStop() int64 {
	stop := s.StopAt
	for i := range s.Jobs {
		if t := launchTime(s.Jobs[i].Launch.StopDateTime); t != 0 && (stop == 0 || t < stop) {
			stop = t
		}
	}
	return stop
}
