package fsm

import (
	"slices"
	"strings"

	"github.com/amserver/amserver/api"
)

// Runtimes are what a node can run and what a job needs (DESIGN §3.1). A
// RuntimeSet is a bit set of canonical runtimes, so placement compares a
// job's need with a node's offer in one AND.
type RuntimeSet uint8

const (
	RuntimeExec RuntimeSet = 1 << iota
	RuntimeWasm
	RuntimeDocker
	RuntimeCompose
	RuntimePVEVM
	RuntimePVECT
	// runtimeUnknown is a need no node offers: a template whose runtime
	// cannot be found (a dry run of a bad ref). It keeps such a job
	// unplaceable instead of letting it land anywhere.
	runtimeUnknown
)

// runtimeNames are the canonical names in bit order, then the aliases
// (matching is case-insensitive).
var (
	runtimeNames = []string{api.RuntimeExec, api.RuntimeWasm, api.RuntimeDocker, api.RuntimeCompose,
		api.RuntimePVEVM, api.RuntimePVECT}
	runtimeAliases = map[string]RuntimeSet{"wasmtime": RuntimeWasm, "container": RuntimeDocker}
)

// proxmoxOnly are the runtimes only a node of kind proxmox offers.
const proxmoxOnly = RuntimePVEVM | RuntimePVECT

// ParseRuntime returns the runtime a name or alias means, case-insensitively.
func ParseRuntime(name string) (RuntimeSet, bool) {
	lower := strings.ToLower(strings.TrimSpace(name))
	if i := slices.Index(runtimeNames, lower); i >= 0 {
		return 1 << i, true
	}
	r, ok := runtimeAliases[lower]
	return r, ok
}

// Names lists the set's canonical names in a fixed order.
func (s RuntimeSet) Names() []string {
	var out []string
	for i, n := range runtimeNames {
		if s&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if s&runtimeUnknown != 0 {
		out = append(out, "unknown")
	}
	return out
}

func (s RuntimeSet) String() string {
	if s == 0 {
		return "none"
	}
	return strings.Join(s.Names(), "|")
}

// Fits reports whether a node offering s can run a job that needs one of
// need; a zero need (driver none) fits every node.
func (s RuntimeSet) Fits(need RuntimeSet) bool { return need == 0 || s&need != 0 }

// OfferedRuntimes is what a node (or an instance type) runs: its runtimes,
// or exec when it lists none (nodes registered before runtimes existed run
// exec and none jobs as before), plus pve-vm and pve-ct on a Proxmox host
// and only there.
func OfferedRuntimes(runtimes []string, kind string) RuntimeSet {
	var s RuntimeSet
	for _, name := range runtimes {
		r, _ := ParseRuntime(name)
		s |= r
	}
	if len(runtimes) == 0 {
		s = RuntimeExec
	}
	if kind == api.NodeKindProxmox {
		return s | proxmoxOnly
	}
	return s &^ proxmoxOnly
}

// RuntimeSet is the node's offer (OfferedRuntimes).
func (n *Node) RuntimeSet() RuntimeSet { return OfferedRuntimes(n.Runtimes, n.Kind) }

// templateRuntimes looks up the runtime of a template ref ("" when unknown).
type templateRuntimes func(ref string) string

// JobRuntimeNeed is the runtimes a job may run on: its runtime.oneOf, or
// the one its launch implies (a template's runtime; a legacy driver; none
// for driver none, which needs nothing). Unknown names in oneOf (refused by
// validation) are ignored.
func JobRuntimeNeed(j *Job, lookup templateRuntimes) RuntimeSet {
	if j.Runtime != nil && len(j.Runtime.OneOf) > 0 {
		var s RuntimeSet
		for _, name := range j.Runtime.OneOf {
			r, _ := ParseRuntime(name)
			s |= r
		}
		if s == 0 {
			return runtimeUnknown
		}
		return s
	}
	r := LaunchRuntime(&j.Launch, lookup)
	if r == api.DriverNone {
		return 0
	}
	if s, ok := ParseRuntime(r); ok {
		return s
	}
	return runtimeUnknown
}

// ServiceRuntimeNeed is what a node service's (legacy) launch needs of a node.
func ServiceRuntimeNeed(s *NodeService) RuntimeSet {
	return JobRuntimeNeed(&Job{Launch: s.Launch}, nil)
}

// LaunchRuntime is what a worker runs a launch with (Assignment.Runtime):
// the template's runtime, or the legacy driver (exec, docker, none). It is
// "" only for a template whose runtime cannot be found.
func LaunchRuntime(l *Launch, lookup templateRuntimes) string {
	switch {
	case l.Kind == api.LaunchProductTemplate:
		if lookup == nil {
			return ""
		}
		return lookup(l.Ref)
	case l.Job != nil && l.Job.Driver != "":
		return l.Job.Driver
	case l.Driver != "":
		return l.Driver
	}
	return api.DriverNone
}
