package fsm

import (
	"sort"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/ledger"
)

// The state's types say how they convert in their struct tags, so a field
// is declared once: json names it in Raft commands (msgpack reads json
// tags) and in the digest; unit and api pair it with its wire field
// (internal/convert); row numbers it in snapshot records (rowcodec.go).
// Adding a field without the tags its neighbours have fails at init.

// Node statuses (DESIGN §2.1, §4).
const (
	NodeReady   = api.NodeReady
	NodeSuspect = api.NodeSuspect
	NodeDown    = api.NodeDown
	NodeLeft    = api.NodeLeft
	NodeUnknown = api.NodeUnknown
)

// Node is a registered worker: its inventory, its observed status and what its
// reservations hold. Quantities are milli-units.
type Node struct {
	ID             string              `json:"id"`
	Pool           string              `json:"pool"`
	Labels         map[string]string   `json:"labels,omitempty"`
	Taints         []string            `json:"taints,omitempty"`
	TotalCapacity  int64               `json:"totalCapacity" unit:"milli"`
	UtilizationCap int64               `json:"utilizationCap" unit:"milli"` // 1000 = 100 %
	TotalCores     int                 `json:"totalCores"`
	GPUs           []ledger.GPU        `json:"gpus,omitempty"`
	Capabilities   []ledger.Capability `json:"capabilities,omitempty"`
	Runtimes       []string            `json:"runtimes,omitempty"`
	Kind           string              `json:"kind,omitempty"`
	// TotalMemoryMiB bounds the memory requests placed here (0: none).
	TotalMemoryMiB int64 `json:"totalMemoryMiB,omitempty"`

	// Provided holds capabilities added by running node services, keyed by service id.
	Provided map[string][]ledger.Capability `json:"provided,omitempty" api:"-"`

	Status     string       `json:"status"`
	Cordoned   bool         `json:"cordoned"`
	Draining   bool         `json:"draining"`
	StatusTime int64        `json:"statusTime" api:"-"` // leader clock, unix nanos, of the last transition
	Usage      ledger.Usage `json:"usage" api:"-"`      // shown as the computed reserved

	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// Allocatable is totalCapacity × utilizationCap in milli-units.
func (n *Node) Allocatable() int64 {
	return n.TotalCapacity * n.UtilizationCap / 1000
}

// Inventory is what the ledger may hand out on this node, including
// capabilities provided by running node services.
func (n *Node) Inventory() ledger.Inventory {
	inv := ledger.Inventory{
		Allocatable:    n.Allocatable(),
		TotalCores:     n.TotalCores,
		TotalMemoryMiB: n.TotalMemoryMiB,
		GPUs:           n.GPUs,
		Capabilities:   n.Capabilities,
	}
	if len(n.Provided) > 0 {
		inv.Capabilities = mergeProvided(n.Capabilities, n.Provided)
	}
	return inv
}

// Placeable reports whether new work may land on the node (DESIGN §2.1).
func (n *Node) Placeable() bool {
	return n.Status == NodeReady && !n.Cordoned && !n.Draining
}

// AZ and Cloud are the node's failure-domain labels.
func (n *Node) AZ() string    { return n.Labels["az"] }
func (n *Node) Cloud() string { return n.Labels["cloud"] }

// Pool kinds and scoring policies (DESIGN §2.2).
const (
	PoolCluster    = api.PoolCluster
	PoolElastic    = api.PoolElastic
	ScoringBinpack = api.ScoringBinpack
	ScoringSpread  = api.ScoringSpread
)

// Types without units are the wire types themselves (package api): the API
// edge copies them, and nothing here can drift from what clients send. A
// type that gains a quantity or a time stops being an alias and gets unit
// tags.
type (
	Tier        = api.Tier
	Provisioner = api.Provisioner
	Placement   = api.Placement
	Resilience  = api.Resilience
	Affinity    = api.Affinity
	Launch      = api.Launch
	LegacyJob   = api.LegacyJob
	NearestMiss = api.NearestMiss
	// RuntimeRequirement is a job's runtime.oneOf.
	RuntimeRequirement = api.RuntimeRequirement
	Explain            = api.Explain
)

// PoolDefaults are layered into jobs that omit capacity, cores or memory.
type PoolDefaults struct {
	Capacity  int64 `json:"capacity" unit:"milli"`
	Cores     int   `json:"cores"`
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// InstanceType is a node profile an elastic pool can provision.
type InstanceType struct {
	Name          string              `json:"name"`
	TotalCapacity int64               `json:"totalCapacity" unit:"milli"`
	TotalCores    int                 `json:"totalCores"`
	GPUs          []ledger.GPU        `json:"gpus,omitempty"`
	Capabilities  []ledger.Capability `json:"capabilities,omitempty"`
	// Runtimes and Kind are what its nodes will advertise (Node's).
	Runtimes []string `json:"runtimes,omitempty"`
	Kind     string   `json:"kind,omitempty"`
	// TotalMemoryMiB is what its nodes will register.
	TotalMemoryMiB int64 `json:"totalMemoryMiB,omitempty"`
	// Labels and Taints are what its nodes register with (api.InstanceType).
	Labels map[string]string `json:"labels,omitempty"`
	Taints []string          `json:"taints,omitempty"`
}

// Pool groups nodes; it carries placement policy and aggregate caps.
type Pool struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Tiers   []Tier          `json:"tiers,omitempty"`
	Scoring string          `json:"scoring"`
	Caps    ledger.PoolCaps `json:"caps"`
	// CapGroup names the cap group whose caps the pool's reservations
	// also count against ("" for none; caps.go).
	CapGroup      string           `json:"capGroup,omitempty"`
	Defaults      PoolDefaults     `json:"defaults"`
	InstanceTypes []InstanceType   `json:"instanceTypes,omitempty"`
	Provisioner   *Provisioner     `json:"provisioner,omitempty"`
	MinNodes      int              `json:"minNodes,omitempty"`
	MaxNodes      int              `json:"maxNodes,omitempty"`
	Warm          int              `json:"warm,omitempty"`
	IdleTimeout   int64            `json:"idleTimeout,omitempty" unit:"duration"`
	SpawnTimeout  int64            `json:"spawnTimeout,omitempty" unit:"duration"`
	Usage         ledger.PoolUsage `json:"usage"`

	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// Priority bands, highest first (DESIGN §3.6).
const (
	PriorityGold   = api.PriorityGold
	PrioritySilver = api.PrioritySilver
	PriorityBronze = api.PriorityBronze
)

// Band orders priorities: lower is more important; unknown sorts last.
func Band(priority string) int {
	switch priority {
	case PriorityGold:
		return 0
	case PrioritySilver, "":
		return 1
	case PriorityBronze:
		return 2
	}
	return 3
}

// SameAz modes and resilience rules.
const (
	SameAzHard = api.SameAzHard
	SameAzSoft = api.SameAzSoft
	SameAzOff  = api.SameAzOff
	Allow      = api.Allow
	Forbid     = api.Forbid
)

// Job is one member of a bundle.
type Job struct {
	Name         string         `json:"name" row:"1,intern"`
	Requirements ledger.Request `json:"requirements" row:"2"`
	CoLocateWith []string       `json:"coLocateWith,omitempty" row:"3,intern"`
	SeparateFrom []string       `json:"separateFrom,omitempty" row:"4,intern"`
	// The node rules are behind a pointer because few jobs set any: a job
	// is 320 bytes instead of 384 (12 MiB at 100k two-job bundles).
	// Embedded, their fields keep their JSON, msgpack and row encodings;
	// Job's methods of the same names shadow them, so no code reads
	// through a nil pointer (EditRules sets them).
	*NodeRules `row:"inline"`
	Launch     Launch              `json:"launch" row:"8"`
	Runtime    *RuntimeRequirement `json:"runtime,omitempty" row:"9"`
	// Priority is the job's own band ("" = the bundle's); row 20 leaves
	// 10..19 to the memory fields.
	Priority string `json:"priority,omitempty" row:"20,intern"`
}

// BundleSpec is everything a user submits; it is what identical-retry and
// replace compare.
type BundleSpec struct {
	ID         string            `json:"id" row:"1"`
	Pool       string            `json:"pool" row:"2,intern"`
	Priority   string            `json:"priority" row:"3,intern"`
	Jobs       []Job             `json:"jobs" row:"4"`
	Placement  Placement         `json:"placement" row:"5"`
	Resilience *Resilience       `json:"resilience,omitempty" row:"6"`
	StartAt    int64             `json:"startAt,omitempty" unit:"instant" row:"7"` // 0 = none
	StopAt     int64             `json:"stopAt,omitempty" unit:"instant" row:"8"`
	Tags       map[string]string `json:"tags,omitempty" row:"9"`

	// Kind is "" (resilient), service or batch (DESIGN §2.3); row numbers
	// 30..38 are this branch's share of the struct's numbering.
	Kind             string         `json:"kind,omitempty" row:"30,intern"`
	Count            int            `json:"count,omitempty" row:"31"`
	MaxPerNode       int            `json:"maxPerNode,omitempty" row:"32"`
	MaxPerAz         int            `json:"maxPerAz,omitempty" row:"33"`
	MaxUnavailable   int            `json:"maxUnavailable,omitempty" row:"34"`
	Restart          *RestartPolicy `json:"restart,omitempty" row:"35"`
	TTLAfterFinished int64          `json:"ttlAfterFinished,omitempty" unit:"duration" row:"36"`
}

// Replicas is the derived replica count (DESIGN §2.3): a service's count,
// else 2 when resilience is present, else 1.
func (s *BundleSpec) Replicas() int {
	switch {
	case s.IsService():
		return s.Count
	case s.Resilience != nil:
		return 2
	}
	return 1
}

// EffectivePriority is the highest band among the bundle's priority and
// its jobs' own (the seed's queue orders a bundle by its highest job);
// silver when none is set.
func (s *BundleSpec) EffectivePriority() string {
	best := s.Priority
	for i := range s.Jobs {
		// An unknown band (refused by validation) never wins.
		if p := s.Jobs[i].Priority; Band(p) <= Band(PriorityBronze) && p != "" && (best == "" || Band(p) < Band(best)) {
			best = p
		}
	}
	if best == "" {
		return PrioritySilver
	}
	return best
}

// EffectiveBand is Band(EffectivePriority()).
func (s *BundleSpec) EffectiveBand() int { return Band(s.EffectivePriority()) }

// Job returns the named job, or nil.
func (s *BundleSpec) Job(name string) *Job {
	for i := range s.Jobs {
		if s.Jobs[i].Name == name {
			return &s.Jobs[i]
		}
	}
	return nil
}

// Bundle states (DESIGN §4).
const (
	StateScheduled   = api.StateScheduled
	StatePending     = api.StatePending
	StatePlaced      = api.StatePlaced
	StateDegraded    = api.StateDegraded
	StateUnplaceable = api.StateUnplaceable
	StateDeleting    = api.StateDeleting
	StateComplete    = api.StateComplete
	StateFailed      = api.StateFailed
)

// BundleStates is every state a bundle can be in: what a filter by state
// accepts. The HTTP API's tests hold it to api's State constants, so a new
// state cannot be left out.
var BundleStates = []string{
	StateScheduled, StatePending, StatePlaced, StateDegraded, StateUnplaceable, StateDeleting, StateComplete, StateFailed,
}

// Replica roles and job statuses.
const (
	RolePrimary = api.RolePrimary
	RoleBackup  = api.RoleBackup
	RoleReplica = api.RoleReplica

	JobAssigned = api.JobAssigned
	JobRunning  = api.JobRunning
	JobStopping = api.JobStopping
	JobStopped  = api.JobStopped
	JobFailed   = api.JobFailed
	JobExited   = api.JobExited
)

// JobPlacement is where one job of one replica sits.
type JobPlacement struct {
	Name   string       `json:"name" row:"1,intern"`
	NodeID string       `json:"nodeId,omitempty" row:"2,intern"`
	Grant  ledger.Grant `json:"grant" row:"3"`
	Status string       `json:"status,omitempty" row:"4,intern"`
	// Message is the worker's message with that status (why a job failed),
	// mirrored from its assignment as Status is, so a bundle read says it.
	Message string `json:"message,omitempty" row:"28"`

	// A batch job's last exit code (status exited), how many times it was
	// restarted, and when the leader restarts it next (0: not waiting).
	// ExitCode and Attempts are 32-bit so that the two share a word: a
	// placement then fits 176 bytes (two jobs' in a 352-byte block, not
	// 384).
	ExitCode  int32 `json:"exitCode,omitempty" api:"-" row:"25"`
	Attempts  int32 `json:"attempts,omitempty" row:"26"`
	RestartAt int64 `json:"restartAt,omitempty" api:"-" row:"27"`
}

// Placed reports whether the job holds a node.
func (j *JobPlacement) Placed() bool { return j.NodeID != "" }

// Replica is one copy of a bundle's jobs. Index 0 of Bundle.Replicas is the
// primary; a promotion swaps the entries, and Slot keeps the ledger keys (and
// assignment ids) of running jobs unchanged.
type Replica struct {
	Slot  int            `json:"slot" api:"-" row:"1"` // ledger key replica number, stable across promotions
	Role  string         `json:"role" row:"2,intern"`
	State string         `json:"state" row:"3,intern"`
	Jobs  []JobPlacement `json:"jobs" row:"4"`
}

// Complete reports whether every job of the replica holds a node.
func (r *Replica) Complete() bool {
	for i := range r.Jobs {
		if !r.Jobs[i].Placed() {
			return false
		}
	}
	return len(r.Jobs) > 0
}

// Degradation codes (DESIGN §3.3, §3.4).
const (
	DegradeReplicaSpansAz = "replicaSpansAz"
	DegradeBackupSameCld  = "backupSameCloud"
	DegradeBackupSameAz   = "backupSameAz"
	DegradeBackupSameNode = "backupSameNode"
	DegradeNoBackup       = "noBackup"
	// DegradeReplicasMissing: a service has fewer complete replicas than
	// its count.
	DegradeReplicasMissing = "replicasMissing"
)

// Degradation records a relaxed soft rule.
type Degradation struct {
	Code    string `json:"code" row:"1,intern"`
	Message string `json:"message" row:"2"`
	Since   int64  `json:"since" unit:"instant" row:"3"` // leader clock
}

// Bundle is a spec plus its replicated status.
type Bundle struct {
	Spec         BundleSpec    `json:"spec" api:",inline" row:"1"`
	State        string        `json:"state" row:"2,intern"`
	Epoch        uint64        `json:"epoch" row:"3"`
	Replicas     []Replica     `json:"replicas" row:"4"`
	Degradations []Degradation `json:"degradations,omitempty" row:"5"`
	Explain      *Explain      `json:"explain,omitempty" row:"6"`
	SubmitTime   int64         `json:"submitTime" api:"-" row:"7"` // leader clock at create: queue age
	Deleting     bool          `json:"deleting,omitempty" api:"-" row:"8"`
	DeleteTime   int64         `json:"deleteTime,omitempty" api:"-" row:"9"`    // leader clock when deletion started
	AttemptIndex uint64        `json:"attemptIndex,omitempty" api:"-" row:"10"` // raft index of the last failed placement
	// Outcome is a batch bundle's final state (complete, failed) and
	// FinishTime the leader clock when it was reached; Generation counts
	// in-place launch changes (assignments carry it; a worker restarts a
	// job whose generation moved).
	Outcome    string `json:"outcome,omitempty" api:"-" row:"33,intern"`
	FinishTime int64  `json:"finishTime,omitempty" unit:"instant" row:"34"`
	Generation uint64 `json:"generation,omitempty" row:"35"`
	// Rolling is set while a service's launch change is being rolled out
	// (some replicas still run an older generation).
	Rolling bool `json:"rolling,omitempty" row:"36"`
	// Ran names, once a batch bundle finished, the assignments its jobs
	// last ran as ("bundle:slot:job@node"): their workers keep the output
	// a while, and a logs request finds the node by it. Display only: the
	// digest leaves it out (digest.go).
	Ran []string `json:"ran,omitempty" api:"-" row:"37"`
	// Settling are the slots of a service's replicas a rollout relaunched
	// (under ReplaceBundleRequest.SettleRollout) that the leader has not
	// yet seen run for its settle window: the rollout counts them
	// unavailable, as a version that crashes right after it starts reads
	// running first (fsm/rollout_settle.go).
	Settling []int `json:"settling,omitempty" api:"-" row:"38"`

	CreateIndex uint64 `json:"createIndex" row:"11"`
	ModifyIndex uint64 `json:"modifyIndex" row:"12"`
}

// ID is the bundle id.
func (b *Bundle) ID() string { return b.Spec.ID }

// Assignment desired states.
const (
	DesiredRun  = api.DesiredRun
	DesiredStop = api.DesiredStop
)

// Assignment is what a worker must run: one job of one replica on one node.
// Its ID is "bundle:replica:job@node"; the replica index is the one at
// placement time, so a promotion does not rename a running assignment.
type Assignment struct {
	ID       string       `json:"id" row:"1"`
	BundleID string       `json:"bundleId" row:"2"`
	Replica  int          `json:"replica" api:"-" row:"3"` // ledger key replica slot, stable across promotions
	Job      string       `json:"job" row:"4,intern"`
	NodeID   string       `json:"nodeId" row:"5,intern"`
	Role     string       `json:"role" row:"6,intern"`
	Epoch    uint64       `json:"epoch" row:"7"`
	Desired  string       `json:"desired" row:"8,intern"`
	Status   string       `json:"status" row:"9,intern"`
	Message  string       `json:"message,omitempty" row:"10"`
	Grant    ledger.Grant `json:"grant" row:"11"`
	// Launch is what the worker runs. It points at the launch it was made
	// from (the bundle job's or the node service's, in their rows) rather
	// than holding a copy: rows are never written once committed, so
	// sharing is safe, and at 100,000 bundles the copies were tens of MiB.
	// A restore shares it again (shareLaunches). Never nil in a stored row.
	Launch *Launch `json:"launch" row:"12,v1value"`
	// ServiceID is set instead of BundleID for node-service assignments.
	ServiceID string `json:"serviceId,omitempty" row:"13,intern"`
	// Runtime is what the worker runs Launch with (Assignment.Runtime).
	Runtime string `json:"runtime,omitempty" row:"16,intern"`
	// MemoryLimitMiB is what the worker's driver enforces (0: no limit);
	// the reserved request is Grant.MemoryMiB.
	MemoryLimitMiB int64 `json:"memoryLimitMiB,omitempty" row:"17"`
	// Generation moves when the job must restart where it runs (an
	// in-place launch change, a batch restart); RunOnce marks a batch job,
	// which the worker runs to completion and does not restart; ExitCode is
	// its exit code once status is exited.
	Generation uint64 `json:"generation,omitempty" row:"37"`
	RunOnce    bool   `json:"runOnce,omitempty" row:"38"`
	// ExitCode is 32-bit to share RunOnce's word: an assignment then fits
	// a 320-byte block rather than 352.
	ExitCode int32 `json:"exitCode,omitempty" api:"-" row:"39"`

	CreateIndex uint64 `json:"createIndex" row:"14"`
	ModifyIndex uint64 `json:"modifyIndex" row:"15"`
}

// NodeService is a per-node service (DESIGN §2.5): eager, or lazy (started
// where a bundle consumes what it provides).
type NodeService struct {
	ID           string                     `json:"id"`
	Pools        []string                   `json:"pools"`
	Consumes     []ledger.CapabilityRequest `json:"consumes,omitempty"`
	Provides     []ledger.Capability        `json:"provides,omitempty"`
	Requirements ServiceRequirements        `json:"requirements,omitzero"`
	Constraints  []string                   `json:"constraints,omitempty"`
	Lifecycle    string                     `json:"lifecycle"`
	Launch       Launch                     `json:"launch"`

	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// ServiceRequirements is what a node service reserves on each node it runs
// on: capacity, pinned cores and memory, charged like a job's.
type ServiceRequirements struct {
	Capacity  int64 `json:"capacity" unit:"milli"`
	Cores     int   `json:"cores"`
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// Request is the ledger request of a service instance: its requirements
// and what it consumes.
func (s *NodeService) Request() ledger.Request {
	return ledger.Request{Capacity: s.Requirements.Capacity, Cores: s.Requirements.Cores,
		MemoryMiB: s.Requirements.MemoryMiB, Capabilities: s.Consumes}
}

// Event is one entry of the cluster's event log (DESIGN §7).
type Event struct {
	Index    uint64 `json:"index"`
	Seq      int    `json:"seq" api:"-"` // position within the raft entry
	Time     int64  `json:"time" unit:"instant"`
	Type     string `json:"type"`
	BundleID string `json:"bundleId,omitempty"`
	NodeID   string `json:"nodeId,omitempty"`
	Message  string `json:"message"`
}

// Effective layers the pool's defaults under a job's request: a job that
// omits capacity, cores or memory gets the pool's. A default memory request
// never exceeds the job's own limit, so a limit alone stays consistent.
func (p *Pool) Effective(req ledger.Request) ledger.Request {
	if p == nil {
		return req
	}
	if req.Capacity == 0 {
		req.Capacity = p.Defaults.Capacity
	}
	if req.Cores == 0 {
		req.Cores = p.Defaults.Cores
	}
	if req.MemoryMiB == 0 {
		req.MemoryMiB = p.Defaults.MemoryMiB
		if req.MemoryLimitMiB > 0 {
			req.MemoryMiB = min(req.MemoryMiB, req.MemoryLimitMiB)
		}
	}
	return req
}

func mergeProvided(base []ledger.Capability, provided map[string][]ledger.Capability) []ledger.Capability {
	services := make([]string, 0, len(provided))
	for id := range provided {
		services = append(services, id)
	}
	sort.Strings(services)
	out := append([]ledger.Capability(nil), base...)
	for _, id := range services {
		for _, c := range provided[id] {
			if i := capabilityIndex(out, c.Name); i >= 0 {
				merged := out[i]
				merged.Count += c.Count
				out[i] = merged
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

func capabilityIndex(list []ledger.Capability, name string) int {
	for i := range list {
		if list[i].Name == name {
			return i
		}
	}
	return -1
}
