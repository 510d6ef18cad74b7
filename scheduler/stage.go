package scheduler

import (
	"github.com/amserver/amserver/ledger"
)

// Explain keys of the feasibility stages (DESIGN §3.7). Capability stages
// use ledger.DimCapabilityPrefix + the capability's name.
const (
	StagePool         = "pool"
	StagePlaceable    = "placeable"
	StageTaints       = "taints"
	StageRuntime      = "runtime"
	StageConstraints  = "constraints"
	StageGPU          = ledger.DimGPU
	StageCores        = ledger.DimCores
	StageCapacity     = ledger.DimCapacity
	StageMemory       = ledger.DimMemory
	StagePoolCaps     = ledger.DimPoolCaps
	StageSameAz       = "sameAz"
	StageSeparateFrom = "separateFrom"
	StageAntiAffinity = "antiAffinity"
	StageMaxPerNode   = "maxPerNode"
	StageMaxPerAz     = "maxPerAz"
)

// filter is one feasibility stage (Kubernetes framework style): a small
// type that looks at one node for one co-location group. Stages are
// composed into a chain in the order of DESIGN §3.1 (Nomad style), and a
// node is counted, in explanations, against the first stage that rejects it.
type filter interface {
	// Name is the stage's explain key; a stage that checks several things
	// (one per capability) reports the precise key through the cycle.
	Name() string
	// Filter reports whether the node passes; on failure it calls c.fail.
	Filter(c *cycle) bool
}

// scorer adds a soft preference for a node that passed every filter.
type scorer interface {
	Score(c *cycle) int64
}

// cycle is the state of evaluating one node for one group: what the node
// holds now (through the batch overlay), what this replica already put on it
// in the current search branch, and why it failed.
type cycle struct {
	s    *search
	g    *group
	n    *nodeInfo
	used ledger.Usage
	host *hosted // this replica's groups already on the node, or nil
	dem  *demand // host's demand plus the group's: what the node must now take

	explain bool // fill detail on failure (explanations only: it costs a Sprintf)

	failKey  string
	detail   string
	conflict uint64 // depth bits of assigned groups whose choice caused the failure
}

// fail records a rejection; callers fill c.detail when c.explain is set.
func (c *cycle) fail(key string, conflict uint64) bool {
	c.failKey, c.conflict = key, conflict
	return false
}

// hostMask is the depth bits of this replica's groups on the node.
func (c *cycle) hostMask() uint64 {
	if c.host == nil {
		return 0
	}
	return c.host.mask
}

// buildChain returns the full chain for a group of a task, cheapest first
// and in the order of DESIGN §3.1; stages a group cannot fail are left out.
// The first two stages are answered by the index when scanning candidates,
// so scans run chain[indexedStages:].
func buildChain(t *replicaTask, g *group, hardAZ bool) []filter {
	chain := []filter{poolFilter{}, placeableFilter{}, taintFilter{}}
	if len(g.runtimes) > 0 {
		chain = append(chain, runtimeFilter{})
	}
	if len(g.exprs) > 0 {
		chain = append(chain, constraintFilter{})
	}
	if len(g.dem.caps) > 0 {
		chain = append(chain, capabilityFilter{})
	}
	if g.dem.needsGPU() {
		chain = append(chain, gpuFilter{})
	}
	if g.dem.cores > 0 {
		chain = append(chain, coresFilter{})
	}
	if g.dem.capacity > 0 {
		chain = append(chain, capacityFilter{})
	}
	if g.dem.memory > 0 {
		chain = append(chain, memoryFilter{})
	}
	if g.dem.capacity > 0 || g.dem.cores > 0 || g.dem.memory > 0 {
		chain = append(chain, poolCapsFilter{})
	}
	if hardAZ {
		chain = append(chain, sameAzFilter{})
	}
	if g.sep != 0 || g.selfSep {
		chain = append(chain, separateFilter{})
	}
	if t.forbid.any() {
		chain = append(chain, antiAffinityFilter{})
	}
	if t.spread.bounded() {
		chain = append(chain, spreadFilter{})
	}
	return chain
}

// indexedStages is how many leading stages the index answers for scans.
const indexedStages = 2

// run evaluates chain on the cycle's node and returns how many stages it
// passed (the nearest-miss measure) and whether it passed them all.
func run(chain []filter, c *cycle) (int, bool) {
	for i, f := range chain {
		if !f.Filter(c) {
			return i, false
		}
	}
	return len(chain), true
}
