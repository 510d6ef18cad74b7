package fsm

import (
	"fmt"
	"strings"
	"time"

	"github.com/amserver/amserver/ledger"
)

// Bounds on pool settings (see validate_bounds.go for the others).
const (
	maxPoolQuantity = 1_000_000_000_000_000 // milli-units: a pool cap of 10^12 units
	maxPoolCores    = 1_000_000_000
	maxPoolTimeout  = int64(30 * 24 * time.Hour) // idleTimeout, spawnTimeout: a deadline never overflows
	maxGPUIndex     = 4095                       // a device's index on its node
)

// FindingError rejects a node, pool or service with one finding, so the API
// can answer its code like a bundle's findings.
type FindingError struct {
	Finding Finding
}

func (e *FindingError) Error() string { return "invalid: " + e.Finding.Message }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *FindingError) Is(target error) bool { return target == ErrInvalid }

func findingErr(code, msg string) error {
	return &FindingError{Finding: Finding{Code: code, Message: msg}}
}

// clipArgs cuts every string argument of a message to MaxEcho characters:
// messages repeat what clients sent, and must not grow with it.
func clipArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = clip(v)
		case []string:
			out[i] = clip(strings.Join(v, ", "))
		default:
			out[i] = a
		}
	}
	return out
}

// nodeLimits bounds a node's labels, taints, GPU models and capabilities.
func nodeLimits(n *Node) error {
	code, msg := firstProblem(
		func() (string, string) {
			return mapLimit("node labels", n.Labels, maxLabels, maxKeyLen, maxLabelValueLen, true)
		},
		func() (string, string) { return listLimit("node taints", n.Taints, maxLabels, maxKeyLen) },
		func() (string, string) { return inventoryLimit("node", n.GPUs, n.Capabilities) },
	)
	if code != "" {
		return findingErr(code, msg)
	}
	return nil
}

// inventoryLimit bounds what a node or an instance type offers.
func inventoryLimit(what string, gpus []ledger.GPU, caps []ledger.Capability) (code, msg string) {
	for _, g := range gpus {
		if g.Index > maxGPUIndex {
			return CodeLimitExceeded, fmt.Sprintf("%s gpu index %d must be at most %d", what, g.Index, maxGPUIndex)
		}
		if code, msg := textLimit(what+" gpu model", g.Model, maxTagKeyLen, true); code != "" {
			return code, msg
		}
	}
	return capabilitiesLimit(what+" capabilities", caps)
}

func capabilitiesLimit(what string, caps []ledger.Capability) (code, msg string) {
	if len(caps) > maxListLen {
		return CodeLimitExceeded, fmt.Sprintf("%s: %d entries, at most %d allowed", what, len(caps), maxListLen)
	}
	for _, c := range caps {
		if code, msg := textLimit(what+" name", c.Name, maxTagKeyLen, true); code != "" {
			return code, msg
		}
		if code, msg := mapLimit(what+" attributes", c.Attributes, maxListLen, maxTagKeyLen, maxTagValueLen, true); code != "" {
			return code, msg
		}
	}
	return "", ""
}

// poolLimits bounds a pool's numbers and lists. Elastic sizes are bounded
// because the leader plans towards them: a warm pool of 10^9 nodes was a
// loop without end.
func poolLimits(p *Pool) error {
	switch {
	case p.MinNodes > maxElasticNodes || p.MaxNodes > maxElasticNodes || p.Warm > maxElasticNodes:
		return findingErr(CodeLimitExceeded, fmt.Sprintf("pool minNodes %d, maxNodes %d and warm %d must each be at most %d",
			p.MinNodes, p.MaxNodes, p.Warm, maxElasticNodes))
	case p.MaxNodes > 0 && p.Warm > p.MaxNodes:
		return invalidf("pool warm %d exceeds maxNodes %d", p.Warm, p.MaxNodes)
	case p.Caps.MaxCapacity > maxPoolQuantity || p.Caps.MaxCores > maxPoolCores:
		return findingErr(CodeLimitExceeded, fmt.Sprintf("pool caps must be at most %s capacity and %d cores", units(maxPoolQuantity), maxPoolCores))
	case p.IdleTimeout > maxPoolTimeout || p.SpawnTimeout > maxPoolTimeout:
		return findingErr(CodeLimitExceeded, fmt.Sprintf("pool idleTimeout and spawnTimeout must be at most %s", time.Duration(maxPoolTimeout)))
	case len(p.Tiers) > maxListLen || len(p.InstanceTypes) > maxListLen:
		return findingErr(CodeLimitExceeded, fmt.Sprintf("pool has %d tiers and %d instance types, at most %d of each allowed",
			len(p.Tiers), len(p.InstanceTypes), maxListLen))
	}
	code, msg := firstProblem(
		func() (string, string) { return poolNamesLimit(p) },
		func() (string, string) { return provisionerLimit(p.Provisioner) },
	)
	if code != "" {
		return findingErr(code, msg)
	}
	return nil
}

func poolNamesLimit(p *Pool) (code, msg string) {
	for _, t := range p.Tiers {
		if code, msg := firstProblem(
			func() (string, string) { return textLimit("pool tier name", t.Name, maxTagKeyLen, true) },
			func() (string, string) { return textLimit("pool tier cloud", t.Cloud, maxLabelValueLen, true) },
		); code != "" {
			return code, msg
		}
	}
	for _, it := range p.InstanceTypes {
		if code, msg := textLimit("pool instance type name", it.Name, maxTagKeyLen, true); code != "" {
			return code, msg
		}
		if code, msg := firstProblem(
			func() (string, string) { return inventoryLimit("pool instance type", it.GPUs, it.Capabilities) },
			func() (string, string) {
				return mapLimit("pool instance type labels", it.Labels, maxLabels, maxKeyLen, maxLabelValueLen, true)
			},
			func() (string, string) {
				return listLimit("pool instance type taints", it.Taints, maxLabels, maxKeyLen)
			},
		); code != "" {
			return code, msg
		}
	}
	return "", ""
}

func provisionerLimit(pr *Provisioner) (code, msg string) {
	if pr == nil {
		return "", ""
	}
	if code, msg := textLimit("pool provisioner url", pr.URL, maxURLLen, true); code != "" {
		return code, msg
	}
	if len(pr.Command) > maxArgs {
		return CodeLimitExceeded, fmt.Sprintf("pool provisioner command: %d arguments, at most %d allowed", len(pr.Command), maxArgs)
	}
	for _, a := range pr.Command {
		if code, msg := argLimit("pool provisioner command argument", a); code != "" {
			return code, msg
		}
	}
	return "", ""
}

// serviceLimits bounds a node service's pools and capabilities.
func serviceLimits(s *NodeService) error {
	code, msg := firstProblem(
		func() (string, string) { return listLimit("service pools", s.Pools, maxListLen, maxKeyLen) },
		func() (string, string) { return capabilityRequestsLimit("service consumes", s.Consumes) },
		func() (string, string) { return capabilitiesLimit("service provides", s.Provides) },
		func() (string, string) { return launchLimit(s.Launch) },
	)
	if code != "" {
		return findingErr(code, msg)
	}
	return nil
}
