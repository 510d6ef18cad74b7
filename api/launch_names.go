package api

import (
	"slices"
	"strings"
)

// A template launch's parameters become variables of its stack (a compose
// project's .env, a module's environment). Some names are not the user's
// to set: the worker's own (AMSERVER_*: the job's identity and tags), and
// those compose reads from a project's .env or from the environment the
// worker runs it in (COMPOSE_*, DOCKER_*: DOCKER_HOST would send the stack
// to another daemon; PATH, HOME and the rest of CLIEnvNames). The servers
// refuse them at admission; the worker refuses them too, for a launch an
// older server admitted.

// CLIEnvNames are the variables of its own environment a worker runs the
// docker and compose CLIs with, besides DOCKER_*.
var CLIEnvNames = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR"}

// reservedParameterPrefixes start the names of whole families of reserved
// variables.
var reservedParameterPrefixes = []string{"AMSERVER_", "COMPOSE_", "DOCKER_"}

// ReservedParameter reports whether a template parameter may not take
// name (whatever its case: compose on some platforms does not tell).
func ReservedParameter(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range reservedParameterPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return slices.Contains(CLIEnvNames, up)
}

// ReservedParameterNames says which names ReservedParameter refuses, for
// messages.
func ReservedParameterNames() string {
	return strings.Join(reservedParameterPrefixes, "*, ") + "*, " + strings.Join(CLIEnvNames, ", ")
}

// TagEnvName is the variable a template launch's tag reaches its workload
// as: AMSERVER_TAG_ and the key upper-cased, every character other than a
// letter, digit or "_" turned into "_". Keys that differ only there (a-b,
// a_b, A_B) share one variable, and the workload sees the first in key
// order; the servers warn of it at submission.
func TagEnvName(key string) string {
	var b strings.Builder
	b.WriteString("AMSERVER_TAG_")
	for _, r := range strings.ToUpper(key) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
