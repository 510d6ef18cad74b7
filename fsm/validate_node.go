package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/amserver/amserver/internal/rowstore"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/ledger"
)

// Limits on submitted values. Anything beyond them is a typo or abuse, and
// bounding them keeps sums far from int64 overflow on every replica.
const (
	maxJobs            = 64
	maxQuantity        = 1_000_000_000 // milli-units: 1,000,000 units
	maxCores           = 4096
	maxMemoryMiB       = 1 << 30 // a node, request or default of 1 PiB
	maxPoolMemoryMiB   = 1 << 40 // a pool cap
	maxExclusiveGPUs   = 64
	maxCapabilityCount = 1_000_000
	maxInventoryCount  = 1_000_000_000
	maxExprs           = 32
	maxExprLen         = 1024
	maxAffinityWeight  = 100
	maxGPUs            = 64
	maxLabels          = 64
	maxKeyLen          = 63
	maxLabelValueLen   = 256
)

const namePattern = "[a-z0-9][a-z0-9._-]{0,62}"

// ValidNodeID is nil when id can name a node. The API checks a worker
// token's node with it: a token bound to a name no node can have is
// useless. Apply does not (tokens replayed from old logs stay as they were).
func ValidNodeID(id string) error {
	if !validName(id) {
		return invalidf("node id %q must match %s", id, namePattern)
	}
	return nil
}

// validName reports whether s matches ^[a-z0-9][a-z0-9._-]{0,62}$; written
// out by hand because it runs for every id on every replica.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func oneOf(v string, allowed ...string) bool { return slices.Contains(allowed, v) }

// Units formats milli-units as the API writes them (2.5).
func Units(m int64) string { return units(m) }

// units renders milli-units as the API's decimal units for messages.
func units(m int64) string { return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64) }

func invalidf(format string, args ...any) error {
	return findingErr(CodeInvalidRequirement, fmt.Sprintf(format, clipArgs(args)...))
}

// ValidateNode checks a registration's inventory; status fields are the
// FSM's own and are not checked.
func ValidateNode(n *Node) error {
	switch {
	case n == nil:
		return invalidf("node is missing")
	case !validName(n.ID):
		return invalidf("node id %q must match %s", n.ID, namePattern)
	case !validName(n.Pool):
		return invalidf("node pool %q must match %s", n.Pool, namePattern)
	case n.TotalCapacity <= 0 || n.TotalCapacity > maxQuantity:
		return invalidf("node totalCapacity %s must be within (0, %s]", units(n.TotalCapacity), units(maxQuantity))
	case n.UtilizationCap <= 0 || n.UtilizationCap > 1000:
		return invalidf("node utilizationCap %s must be within (0, 1]", units(n.UtilizationCap))
	case n.TotalCores < 0 || n.TotalCores > maxCores:
		return invalidf("node totalCores %d must be within 0..%d", n.TotalCores, maxCores)
	case n.TotalMemoryMiB < 0 || n.TotalMemoryMiB > maxMemoryMiB:
		return invalidf("node totalMemoryMiB %d must be within 0..%d", n.TotalMemoryMiB, maxMemoryMiB)
	}
	if err := validateInventory("node", n.GPUs, n.Capabilities); err != nil {
		return err
	}
	if err := checkNodeRuntimes("node", n.Runtimes, n.Kind); err != nil {
		return err
	}
	if err := validateLabelsTaints("node", n.Labels, n.Taints); err != nil {
		return err
	}
	return nodeLimits(n)
}

// validateLabelsTaints checks the labels and taints of a node or of an
// instance type (which its nodes register with).
func validateLabelsTaints(what string, labels map[string]string, taints []string) error {
	if len(labels) > maxLabels {
		return invalidf("%s has %d labels, at most %d allowed", what, len(labels), maxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := validKey(what+" label", k); err != nil {
			return err
		}
		if len(labels[k]) > maxLabelValueLen {
			return invalidf("%s label %q value is longer than %d bytes", what, k, maxLabelValueLen)
		}
	}
	if len(taints) > maxLabels {
		return invalidf("%s has %d taints, at most %d allowed", what, len(taints), maxLabels)
	}
	for _, t := range taints {
		if err := validKey(what+" taint", t); err != nil {
			return err
		}
	}
	return nil
}

func validKey(what, k string) error {
	if k == "" || len(k) > maxKeyLen {
		return invalidf("%s %q must be 1..%d bytes", what, k, maxKeyLen)
	}
	return nil
}

// validateInventory checks the GPUs and capabilities of a node or instance type.
func validateInventory(what string, gpus []ledger.GPU, caps []ledger.Capability) error {
	if len(gpus) > maxGPUs {
		return invalidf("%s gpus: %d devices, at most %d allowed", what, len(gpus), maxGPUs)
	}
	seen := map[int]bool{}
	for _, g := range gpus {
		switch {
		case g.Index < 0 || seen[g.Index]:
			return invalidf("%s gpus: index %d must be unique and >= 0", what, g.Index)
		case g.Capacity <= 0 || g.Capacity > maxQuantity:
			return invalidf("%s gpus: gpu %d capacity %s must be within (0, %s]", what, g.Index, units(g.Capacity), units(maxQuantity))
		}
		seen[g.Index] = true
	}
	return validateCapabilities(what+" capabilities", caps, 0)
}

func validateCapabilities(what string, caps []ledger.Capability, minCount int64) error {
	names := map[string]bool{}
	for _, c := range caps {
		switch {
		case c.Name == "" || names[c.Name]:
			return invalidf("%s: name %q must be non-empty and unique", what, c.Name)
		case c.Count < minCount || c.Count > maxInventoryCount:
			return invalidf("%s: %q count %d must be within %d..%d", what, c.Name, c.Count, minCount, maxInventoryCount)
		}
		names[c.Name] = true
	}
	return nil
}

// NormalizePool fills a pool's defaults in place.
func NormalizePool(p *Pool) {
	if p == nil {
		return
	}
	if p.Kind == "" {
		p.Kind = PoolCluster
	}
	if p.Scoring == "" {
		p.Scoring = ScoringBinpack
	}
}

// ValidatePool checks a (normalized) pool definition.
func ValidatePool(p *Pool) error {
	switch {
	case p == nil:
		return invalidf("pool is missing")
	case !validName(p.Name):
		return invalidf("pool name %q must match %s", p.Name, namePattern)
	case !oneOf(p.Kind, PoolCluster, PoolElastic):
		return invalidf("pool kind %q must be cluster or elastic", p.Kind)
	case !oneOf(p.Scoring, ScoringBinpack, ScoringSpread):
		return invalidf("pool scoring %q must be binpack or spread", p.Scoring)
	case p.Caps.MaxCapacity < 0 || p.Caps.MaxCores < 0 || p.Caps.MaxMemoryMiB < 0:
		return invalidf("pool caps must be >= 0")
	case p.Caps.MaxMemoryMiB > maxPoolMemoryMiB:
		return findingErr(CodeLimitExceeded, fmt.Sprintf("pool caps.maxMemoryMiB must be at most %d", int64(maxPoolMemoryMiB)))
	case p.Defaults.MemoryMiB < 0 || p.Defaults.MemoryMiB > maxMemoryMiB:
		return invalidf("pool defaults.memoryMiB %d must be within 0..%d", p.Defaults.MemoryMiB, maxMemoryMiB)
	case p.Defaults.Capacity < 0 || p.Defaults.Capacity > maxQuantity:
		return invalidf("pool defaults.capacity %s must be within 0..%s", units(p.Defaults.Capacity), units(maxQuantity))
	case p.Defaults.Cores < 0 || p.Defaults.Cores > maxCores:
		return invalidf("pool defaults.cores %d must be within 0..%d", p.Defaults.Cores, maxCores)
	case p.MinNodes < 0 || p.MaxNodes < 0 || p.Warm < 0:
		return invalidf("pool minNodes, maxNodes and warm must be >= 0")
	case p.MaxNodes > 0 && p.MinNodes > p.MaxNodes:
		return invalidf("pool minNodes %d exceeds maxNodes %d", p.MinNodes, p.MaxNodes)
	case p.IdleTimeout < 0 || p.SpawnTimeout < 0:
		return invalidf("pool idleTimeout and spawnTimeout must be >= 0")
	case p.CapGroup != "" && !validName(p.CapGroup):
		return invalidf("pool capGroup %q must match %s", p.CapGroup, namePattern)
	}
	tiers := map[string]bool{}
	for _, t := range p.Tiers {
		if t.Name == "" || tiers[t.Name] || t.Cloud == "" {
			return invalidf("pool tiers: tier %q needs a unique name and a cloud", t.Name)
		}
		tiers[t.Name] = true
	}
	if err := poolLimits(p); err != nil {
		return err
	}
	return validateElastic(p)
}

func validateElastic(p *Pool) error {
	if p.Kind != PoolElastic {
		if len(p.InstanceTypes) > 0 || p.Provisioner != nil {
			return invalidf("pool instanceTypes and provisioner are for elastic pools only")
		}
		return nil
	}
	if pr := p.Provisioner; pr != nil && (pr.URL == "") == (len(pr.Command) == 0) {
		return invalidf("pool provisioner needs exactly one of url or command")
	}
	names := map[string]bool{}
	for _, it := range p.InstanceTypes {
		switch {
		case it.Name == "" || names[it.Name]:
			return invalidf("pool instanceTypes: name %q must be non-empty and unique", it.Name)
		case it.TotalCapacity <= 0 || it.TotalCapacity > maxQuantity:
			return invalidf("pool instanceTypes: %q totalCapacity must be within (0, %s]", it.Name, units(maxQuantity))
		case it.TotalCores < 0 || it.TotalCores > maxCores:
			return invalidf("pool instanceTypes: %q totalCores must be within 0..%d", it.Name, maxCores)
		case it.TotalMemoryMiB < 0 || it.TotalMemoryMiB > maxMemoryMiB:
			return invalidf("pool instanceTypes: %q totalMemoryMiB must be within 0..%d", it.Name, maxMemoryMiB)
		}
		names[it.Name] = true
		what := "pool instance type " + strconv.Quote(it.Name)
		if err := validateInventory(what, it.GPUs, it.Capabilities); err != nil {
			return err
		}
		if err := checkNodeRuntimes(what, it.Runtimes, it.Kind); err != nil {
			return err
		}
		if err := validateLabelsTaints(what, it.Labels, it.Taints); err != nil {
			return err
		}
	}
	return nil
}

// Node service lifecycles (DESIGN §2.5).
const (
	LifecycleEager = api.ServiceLifecycleEager
	LifecycleLazy  = api.ServiceLifecycleLazy
)

// CodeLazyProvidesNothing: a lazy service that provides no capability.
const CodeLazyProvidesNothing = api.FindingLazyServiceProvidesNothing

// NormalizeService fills a node service's defaults in place.
func NormalizeService(s *NodeService) {
	if s == nil {
		return
	}
	if s.Lifecycle == "" {
		s.Lifecycle = LifecycleEager
	}
	NormalizeLaunch(&s.Launch)
}

// ValidateService checks a (normalized) node service.
func ValidateService(s *NodeService) error {
	switch {
	case s == nil:
		return invalidf("node service is missing")
	case !validName(s.ID):
		return invalidf("service id %q must match %s", s.ID, namePattern)
	case len(s.Pools) == 0:
		return invalidf("service pools: at least one pool is required")
	case s.Lifecycle != LifecycleEager && s.Lifecycle != LifecycleLazy:
		return invalidf("service lifecycle %q must be eager or lazy", s.Lifecycle)
	case s.Lifecycle == LifecycleLazy && len(s.Provides) == 0:
		return findingErr(CodeLazyProvidesNothing, fmt.Sprintf("lazy service %s provides nothing: it starts only where a bundle consumes what it provides", clip(s.ID)))
	case s.Requirements.Capacity < 0 || s.Requirements.Capacity > maxQuantity:
		return invalidf("service requirements: capacity %s must be within 0..%s", units(s.Requirements.Capacity), units(maxQuantity))
	case s.Requirements.Cores < 0 || s.Requirements.Cores > maxCores:
		return invalidf("service requirements: cores %d must be within 0..%d", s.Requirements.Cores, maxCores)
	case s.Requirements.MemoryMiB < 0 || s.Requirements.MemoryMiB > maxMemoryMiB:
		return invalidf("service requirements: memoryMiB %d must be within 0..%d", s.Requirements.MemoryMiB, int64(maxMemoryMiB))
	case len(s.Constraints) > maxExprs:
		return invalidf("service constraints: %d, at most %d allowed", len(s.Constraints), maxExprs)
	}
	for i, e := range s.Constraints {
		if strings.TrimSpace(e) == "" || len(e) > maxExprLen {
			return findingErr(CodeInvalidExpression, fmt.Sprintf("service constraint %d is empty or over %d bytes", i, maxExprLen))
		}
	}
	for _, p := range s.Pools {
		if !validName(p) {
			return invalidf("service pools: %q must match %s", p, namePattern)
		}
	}
	for _, c := range s.Consumes {
		if c.Name == "" || c.Count <= 0 || c.Count > maxCapabilityCount {
			return invalidf("service consumes: %q needs a name and a count within 1..%d", c.Name, maxCapabilityCount)
		}
	}
	if err := validateCapabilities("service provides", s.Provides, 1); err != nil {
		return err
	}
	if err := serviceLimits(s); err != nil {
		return err
	}
	var c collector
	checkLaunch(&c, "", &s.Launch)
	if len(c.out.Errors) > 0 {
		return invalidf("service launch: %s", c.out.Errors[0].Message)
	}
	if s.Launch.Kind == api.LaunchProductTemplate {
		return invalidf("service launch: node services run legacy launches only")
	}
	return nil
}

// CheckServiceConstraints compiles a service's constraints (nil exprs
// skips it), as a job's are: a bad one is an invalidExpression finding.
func CheckServiceConstraints(s *NodeService, exprs ExprChecker) error {
	if exprs == nil {
		return nil
	}
	for i, e := range s.Constraints {
		if err := safeCheck(exprs, e); err != nil {
			return findingErr(CodeInvalidExpression, fmt.Sprintf("service constraint %d %q: %v", i, clip(e), err))
		}
	}
	return nil
}

// poolClouds returns the sorted distinct clouds of a pool's tiers, or of its
// nodes' cloud labels when it has no tiers (DESIGN §2.2). Only whether a pool
// spans two clouds matters to its caller, so the node scan (every create of
// a sameCloud-forbid bundle, on every replica) stops at the second cloud.
func poolClouds(st *State, p *Pool) []string {
	var clouds []string
	if len(p.Tiers) > 0 {
		for _, t := range p.Tiers {
			clouds = append(clouds, t.Cloud)
		}
	} else if it, err := st.txn.Get(tableNodes, "pool", p.Name); err == nil {
		for raw := it.Next(); raw != nil; raw = it.Next() {
			if c := raw.(*Node).Cloud(); c != "" && !slices.Contains(clouds, c) {
				if clouds = append(clouds, c); len(clouds) == 2 {
					break
				}
			}
		}
	}
	slices.Sort(clouds)
	clouds = slices.Compact(clouds)
	return slices.DeleteFunc(clouds, func(s string) bool { return s == "" })
}

// profile is one node shape a job could land on: a registered node, or an
// instance type an elastic pool can provision.
type profile struct {
	name string
	inv  ledger.Inventory
	rt   RuntimeSet
}

// profileSource lists a pool's profiles, instance types first. Registered
// nodes count in elastic pools too: a job that fits one is placeable. Each
// profile gains what the pool's node services would provide on it, so a job
// needing a service-provided capability is not rejected. Nodes are read
// only as far as a check asks: the API validates every create against the
// full list, and a job that fits the first node then costs one profile
// instead of one per node of the pool (a scan of thousands per create).
type profileSource struct {
	seen     []profile
	services []*NodeService
	nodes    rowstore.ResultIterator // nil once exhausted
}

func poolProfiles(st *State, p *Pool) *profileSource {
	src := &profileSource{}
	for _, s := range st.Services() {
		if slices.Contains(s.Pools, p.Name) {
			src.services = append(src.services, s)
		}
	}
	if p.Kind == PoolElastic {
		for _, it := range p.InstanceTypes {
			inv := ledger.Inventory{Allocatable: it.TotalCapacity, TotalCores: it.TotalCores, TotalMemoryMiB: it.TotalMemoryMiB, GPUs: it.GPUs}
			inv.Capabilities = withServices(it.Capabilities, nil, src.services)
			src.seen = append(src.seen, profile{name: "instance type " + strconv.Quote(it.Name), inv: inv,
				rt: OfferedRuntimes(it.Runtimes, it.Kind)})
		}
	}
	if it, err := st.txn.Get(tableNodes, "pool", p.Name); err == nil {
		src.nodes = it
	}
	return src
}

// at returns the i-th profile, reading nodes up to it.
func (s *profileSource) at(i int) (profile, bool) {
	for len(s.seen) <= i && s.nodes != nil {
		raw := s.nodes.Next()
		if raw == nil {
			s.nodes = nil
			break
		}
		n := raw.(*Node)
		inv := n.Inventory()
		inv.Capabilities = withServices(n.Capabilities, n.Provided, s.services)
		s.seen = append(s.seen, profile{name: "node " + strconv.Quote(n.ID), inv: inv, rt: n.RuntimeSet()})
	}
	if i < len(s.seen) {
		return s.seen[i], true
	}
	return profile{}, false
}

// withServices merges into base what is provided now plus what each service
// not yet running would provide where base satisfies its consumes.
func withServices(base []ledger.Capability, provided map[string][]ledger.Capability, services []*NodeService) []ledger.Capability {
	all := maps.Clone(provided)
	for _, s := range services {
		if _, ok := all[s.ID]; ok || !capabilitiesFit(base, s.Consumes) {
			continue
		}
		if all == nil {
			all = map[string][]ledger.Capability{}
		}
		all[s.ID] = s.Provides
	}
	if len(all) == 0 {
		return base
	}
	return mergeProvided(base, all)
}

func capabilitiesFit(have []ledger.Capability, want []ledger.CapabilityRequest) bool {
	for _, r := range want {
		if !capabilityFits(have, r) {
			return false
		}
	}
	return true
}

func capabilityFits(have []ledger.Capability, r ledger.CapabilityRequest) bool {
	i := capabilityIndex(have, r.Name)
	if i < 0 || have[i].Count < r.Count {
		return false
	}
	for k, v := range r.AttributeMatches {
		if got, ok := have[i].Attributes[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// shortfall is one dimension of a request a profile cannot meet; what
// describes the request, so equal dimensions compare equal across profiles.
type shortfall struct {
	code, what string
}

// shortfalls lists what profile p lacks for a job's request and runtime
// need on an empty node, in the order runtime, capacity, cores, memory, gpu,
// capabilities. Pool caps bound a single job too.
func shortfalls(req ledger.Request, need RuntimeSet, p profile, caps ledger.PoolCaps) []shortfall {
	var out []shortfall
	// An unknown runtime or template is an error of its own; no profile
	// is to blame.
	if need&runtimeUnknown == 0 && !p.rt.Fits(need) {
		out = append(out, runtimeShortfall(need))
	}
	inv := p.inv
	if req.Capacity > inv.Allocatable || (caps.MaxCapacity > 0 && req.Capacity > caps.MaxCapacity) {
		out = append(out, shortfall{CodeUnsatisfiableCapacity, "capacity " + units(req.Capacity)})
	}
	if req.Cores > inv.TotalCores || (caps.MaxCores > 0 && req.Cores > caps.MaxCores) {
		out = append(out, shortfall{CodeUnsatisfiableCores, fmt.Sprintf("%d pinned cores", req.Cores)})
	}
	if req.MemoryMiB > inv.TotalMemoryMiB || (caps.MaxMemoryMiB > 0 && req.MemoryMiB > caps.MaxMemoryMiB) {
		out = append(out, shortfall{CodeUnsatisfiableMemory, fmt.Sprintf("%d MiB of memory", req.MemoryMiB)})
	}
	if what, ok := gpuFits(req, inv.GPUs); !ok {
		out = append(out, shortfall{CodeUnsatisfiableGpu, what})
	}
	for _, r := range req.Capabilities {
		if !capabilityFits(inv.Capabilities, r) {
			what := fmt.Sprintf("%d of capability %q", r.Count, r.Name)
			if len(r.AttributeMatches) > 0 {
				what += fmt.Sprintf(" with attributes %v", r.AttributeMatches) // fmt sorts map keys
			}
			out = append(out, shortfall{CodeUnsatisfiableCapability, what})
		}
	}
	return out
}

func gpuFits(req ledger.Request, gpus []ledger.GPU) (string, bool) {
	model := "gpu"
	if req.GPUModel != "" {
		model = req.GPUModel + " gpu"
	}
	matching := map[int]bool{}
	share := false
	for _, g := range gpus {
		if req.GPUModel == "" || g.Model == req.GPUModel {
			matching[g.Index] = true
			share = share || g.Capacity >= req.GPUCapacity
		}
	}
	switch {
	case req.GPUCapacity > 0 && !share:
		return fmt.Sprintf("a %s with capacity %s", model, units(req.GPUCapacity)), false
	case req.ExclusiveGPUs > len(matching):
		return fmt.Sprintf("%d exclusive %ss", req.ExclusiveGPUs, model), false
	}
	return "", true
}
