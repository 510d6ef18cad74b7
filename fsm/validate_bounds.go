package fsm

import (
	"fmt"
	"maps"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/ledger"
)

// Validation codes for the bounds on what clients send (DESIGN §3.7): a
// count or size over its limit, and text that is not printable UTF-8.
const (
	CodeLimitExceeded = api.FindingLimitExceeded
	CodeInvalidText   = api.FindingInvalidText
)

// Bounds on client-set lists, maps and strings. Each is far above any real
// use; together with the request body limit they keep every replicated
// value, and every loop over one, small.
const (
	maxListLen      = 64     // tags, tolerations, capabilities, attributes, tiers, instance types, a service's pools
	maxTagKeyLen    = 128    // bytes: tag, attribute and env keys; capability, toleration, tier and model names
	maxTagValueLen  = 1024   // bytes: tag and attribute values
	maxEnvEntries   = 128    // a launch's env
	maxArgs         = 128    // a launch's or a provisioner's command
	maxArgLen       = 4096   // bytes: an env value or a command argument
	maxURLLen       = 2048   // bytes: a provisioner URL
	maxElasticNodes = 10_000 // an elastic pool's minNodes, maxNodes and warm
)

// textProblem says why s is not printable UTF-8 ("" when it is): names,
// keys, tags and labels must not carry control characters, or bidi
// controls that make a value read differently from what it is.
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case isBidiControl(r):
			return fmt.Sprintf("contains the bidirectional control U+%04X", r)
		case !unicode.IsGraphic(r):
			return fmt.Sprintf("contains the non-printable character U+%04X", r)
		}
	}
	return ""
}

func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F
}

// textLimit is one string's bound: its size and, for names, keys, tags
// and labels, printable text.
func textLimit(what, s string, maxLen int, printable bool) (code, msg string) {
	if len(s) > maxLen {
		return CodeLimitExceeded, fmt.Sprintf("%s %q is %d bytes, at most %d allowed", what, clip(s), len(s), maxLen)
	}
	if printable {
		if p := textProblem(s); p != "" {
			return CodeInvalidText, fmt.Sprintf("%s %q %s", what, clip(s), p)
		}
	}
	return "", ""
}

// mapLimit checks a map of strings: its size, its keys (printable, within
// keyLen) and its values (within valueLen; printable when asked). Keys are
// visited in order so the first problem is the same on every replica.
func mapLimit(what string, m map[string]string, maxEntries, keyLen, valueLen int, printableValues bool) (code, msg string) {
	if len(m) > maxEntries {
		return CodeLimitExceeded, fmt.Sprintf("%s: %d entries, at most %d allowed", what, len(m), maxEntries)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if code, msg := textLimit(what+" key", k, keyLen, true); code != "" {
			return code, msg
		}
		if code, msg := textLimit(what+" "+fmt.Sprintf("%q", clip(k))+" value", m[k], valueLen, printableValues); code != "" {
			return code, msg
		}
	}
	return "", ""
}

// listLimit checks a list of names: its length, and each name.
func listLimit(what string, l []string, maxEntries, nameLen int) (code, msg string) {
	if len(l) > maxEntries {
		return CodeLimitExceeded, fmt.Sprintf("%s: %d entries, at most %d allowed", what, len(l), maxEntries)
	}
	for _, s := range l {
		if code, msg := textLimit(what+" entry", s, nameLen, true); code != "" {
			return code, msg
		}
	}
	return "", ""
}

// firstProblem returns the first failed limit of checks, run in order.
func firstProblem(checks ...func() (string, string)) (code, msg string) {
	for _, check := range checks {
		if code, msg := check(); code != "" {
			return code, msg
		}
	}
	return "", ""
}

// checkTags bounds a bundle's tags: at most 64, keys of at most 128 bytes,
// values of at most 1 KiB, all printable.
func checkTags(c *collector, tags map[string]string) {
	if code, msg := mapLimit("tags", tags, maxListLen, maxTagKeyLen, maxTagValueLen, true); code != "" {
		c.errorf("", code, "%s", msg)
	}
}

// checkJobBounds bounds a job's lists, names and launch.
func checkJobBounds(c *collector, j *Job) {
	code, msg := firstProblem(
		func() (string, string) { return listLimit("coLocateWith", j.CoLocateWith, maxJobs, maxKeyLen) },
		func() (string, string) { return listLimit("separateFrom", j.SeparateFrom, maxJobs, maxKeyLen) },
		func() (string, string) { return listLimit("tolerations", j.Tolerations(), maxListLen, maxTagKeyLen) },
		func() (string, string) { return requestLimit(j.Requirements) },
		func() (string, string) { return launchLimit(j.Launch) },
	)
	if code != "" {
		c.errorf(j.Name, code, "%s", msg)
	}
}

// requestLimit bounds a request's GPU model and capability requests.
func requestLimit(r ledger.Request) (code, msg string) {
	if code, msg := textLimit("gpuModel", r.GPUModel, maxTagKeyLen, true); code != "" {
		return code, msg
	}
	return capabilityRequestsLimit("requirements.capabilities", r.Capabilities)
}

func capabilityRequestsLimit(what string, reqs []ledger.CapabilityRequest) (code, msg string) {
	if len(reqs) > maxListLen {
		return CodeLimitExceeded, fmt.Sprintf("%s: %d entries, at most %d allowed", what, len(reqs), maxListLen)
	}
	for _, cr := range reqs {
		if code, msg := textLimit(what+" name", cr.Name, maxTagKeyLen, true); code != "" {
			return code, msg
		}
		if code, msg := mapLimit(what+" attributeMatches", cr.AttributeMatches, maxListLen, maxTagKeyLen, maxTagValueLen, true); code != "" {
			return code, msg
		}
	}
	return "", ""
}

// launchLimit bounds a launch's command and env; env values and arguments
// are the workload's and may hold any text but NUL, which exec cannot pass.
func launchLimit(l Launch) (code, msg string) {
	if len(l.Command) > maxArgs {
		return CodeLimitExceeded, fmt.Sprintf("launch command: %d arguments, at most %d allowed", len(l.Command), maxArgs)
	}
	for _, a := range l.Command {
		if code, msg := argLimit("launch command argument", a); code != "" {
			return code, msg
		}
	}
	if code, msg := mapLimit("launch env", l.Env, maxEnvEntries, maxTagKeyLen, maxArgLen, false); code != "" {
		return code, msg
	}
	for _, k := range slices.Sorted(maps.Keys(l.Env)) {
		if code, msg := argLimit("launch env value of "+fmt.Sprintf("%q", clip(k)), l.Env[k]); code != "" {
			return code, msg
		}
	}
	return "", ""
}

func argLimit(what, s string) (code, msg string) {
	switch {
	case len(s) > maxArgLen:
		return CodeLimitExceeded, fmt.Sprintf("%s %q is %d bytes, at most %d allowed", what, clip(s), len(s), maxArgLen)
	case !utf8.ValidString(s) || slices.Contains([]byte(s), 0):
		return CodeInvalidText, fmt.Sprintf("%s %q is not valid UTF-8 or holds a NUL byte", what, clip(s))
	}
	return "", ""
}
