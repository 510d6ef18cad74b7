package api

import "time"

// Priorities, placement modes and resilience rules.
const (
	PriorityGold   = "gold"
	PrioritySilver = "silver"
	PriorityBronze = "bronze"

	SameAzHard = "hard"
	SameAzSoft = "soft"
	SameAzOff  = "off"

	Allow  = "allow"
	Forbid = "forbid"

	DriverExec = "exec"
	DriverNone = "none"
)

// Bundle states, replica roles and job statuses.
const (
	StateScheduled   = "scheduled"
	StatePending     = "pending"
	StatePlaced      = "placed"
	StateDegraded    = "degraded"
	StateUnplaceable = "unplaceable"
	StateDeleting    = "deleting"

	// StateComplete and StateFailed are a batch bundle's final states.
	StateComplete = "complete"
	StateFailed   = "failed"

	RolePrimary = "primary"
	RoleBackup  = "backup"
	// RoleReplica is every replica of a service bundle: they are peers.
	RoleReplica = "replica"

	JobAssigned = "assigned"
	JobRunning  = "running"
	JobStopping = "stopping"
	JobStopped  = "stopped"
	JobFailed   = "failed"
	// JobExited is a batch job whose process ended (see exitCode).
	JobExited = "exited"
)

// Bundle kinds (DESIGN §2.3) and batch restart modes.
const (
	KindResilient = "resilient"
	KindService   = "service"
	KindBatch     = "batch"

	RestartFail  = "fail"
	RestartDelay = "delay"
)

// Requirements is what one job needs on one node.
type Requirements struct {
	Capacity      float64             `json:"capacity"`
	Cores         int                 `json:"cores"`
	GPUCapacity   float64             `json:"gpuCapacity,omitempty"`
	GPUModel      string              `json:"gpuModel,omitempty"`
	ExclusiveGPUs int                 `json:"exclusiveGpus,omitempty"`
	Capabilities  []CapabilityRequest `json:"capabilities,omitempty"`
	// MemoryMiB is reserved on the node: requests never add up past a
	// node's totalMemoryMiB. MemoryLimitMiB (>= MemoryMiB when both are
	// set) is what the driver enforces; without it nothing is enforced.
	MemoryMiB      int64 `json:"memoryMiB,omitempty"`
	MemoryLimitMiB int64 `json:"memoryLimitMiB,omitempty"`
}

// Affinity is a soft constraint with a weight in -100..100.
type Affinity struct {
	Expression string `json:"expression" row:"1"`
	Weight     int    `json:"weight" row:"2"`
}

// Launch says how a worker runs a job: a union on Kind (the seed's
// LaunchSpec). A productTemplate launch runs a template (Ref is "name" or
// "name@sha256:<hex>"; a create resolves it to the digest) with Parameters
// as the stack's .env and Tags projected into it as AMSERVER_TAG_<NAME>;
// StartDateTime and StopDateTime (RFC 3339) hold the job pending until the
// start and stop it at the stop. A legacy launch runs Job through a driver.
// Driver, Command and Env are the older shape, accepted on input and read
// back as a legacy launch (Normalize).
type Launch struct {
	Kind          string            `json:"kind,omitempty" row:"4,intern"`
	Ref           string            `json:"ref,omitempty" row:"5"`
	Parameters    map[string]string `json:"parameters,omitempty" row:"6"`
	Tags          map[string]string `json:"tags,omitempty" row:"7"`
	StartDateTime string            `json:"startDateTime,omitempty" row:"8"`
	StopDateTime  string            `json:"stopDateTime,omitempty" row:"9"`
	Job           *LegacyJob        `json:"job,omitempty" row:"10"`

	Driver  string            `json:"driver,omitempty" row:"1,intern"`
	Command []string          `json:"command,omitempty" row:"2"`
	Env     map[string]string `json:"env,omitempty" row:"3"`
}

// Job is one member of a bundle.
type Job struct {
	Name string `json:"name"`
	// Priority is the job's own band; the bundle runs at the highest of
	// its own and its jobs' (Bundle.EffectivePriority).
	Priority     string       `json:"priority,omitempty"`
	Requirements Requirements `json:"requirements"`
	CoLocateWith []string     `json:"coLocateWith,omitempty"`
	SeparateFrom []string     `json:"separateFrom,omitempty"`
	Tolerations  []string     `json:"tolerations,omitempty"`
	Constraints  []string     `json:"constraints,omitempty"`
	Affinities   []Affinity   `json:"affinities,omitempty"`
	// Runtime chooses the runtimes the job may run on; without it the
	// launch implies one (a template's runtime, a legacy driver's).
	Runtime *RuntimeRequirement `json:"runtime,omitempty"`
	Launch  Launch              `json:"launch"`
}

// Placement holds the intra-replica rules.
type Placement struct {
	SameNodeDefault bool   `json:"sameNodeDefault" row:"1"`
	SameAz          string `json:"sameAz,omitempty" row:"2,intern"`
}

// Resilience asks for a backup replica kept out of the primary's failure
// domains; each rule is "allow" or "forbid".
type Resilience struct {
	Pool      string `json:"pool,omitempty" row:"1,intern"`
	SameNode  string `json:"sameNode,omitempty" row:"2,intern"`
	SameAz    string `json:"sameAz,omitempty" row:"3,intern"`
	SameCloud string `json:"sameCloud,omitempty" row:"4,intern"`
}

// RestartPolicy says what a batch bundle does when a job exits non-zero:
// restart it up to Attempts times, Delay (a Go duration) after each exit;
// then mode "fail" ends the bundle failed, "delay" keeps restarting.
type RestartPolicy struct {
	Attempts int    `json:"attempts"`
	Delay    string `json:"delay,omitempty"`
	Mode     string `json:"mode,omitempty"`
}

// BundleSpec is what a user submits (POST /v1/bundles, PUT
// /v1/bundles/{id}). StartAt and StopAt are RFC 3339 instants or "".
// Kind is resilient (the default: a primary and an optional backup),
// service (Count peer replicas, spread softly over nodes and AZs, at most
// MaxPerNode on a node and MaxPerAz in an AZ when set; a launch change
// replaces at most MaxUnavailable at a time) or batch (jobs run to
// completion; Restart, and deleted TTLAfterFinished after it finished).
type BundleSpec struct {
	ID               string            `json:"id,omitempty"`
	Pool             string            `json:"pool"`
	Priority         string            `json:"priority,omitempty"`
	Kind             string            `json:"kind,omitempty"`
	Count            int               `json:"count,omitempty"`
	MaxPerNode       int               `json:"maxPerNode,omitempty"`
	MaxPerAz         int               `json:"maxPerAz,omitempty"`
	MaxUnavailable   int               `json:"maxUnavailable,omitempty"`
	Restart          *RestartPolicy    `json:"restart,omitempty"`
	TTLAfterFinished string            `json:"ttlAfterFinished,omitempty"`
	Jobs             []Job             `json:"jobs"`
	Placement        Placement         `json:"placement"`
	Resilience       *Resilience       `json:"resilience,omitempty"`
	StartAt          string            `json:"startAt,omitempty"`
	StopAt           string            `json:"stopAt,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// GPUShare is a fractional share of one device.
type GPUShare struct {
	Index    int     `json:"index"`
	Capacity float64 `json:"capacity"`
}

// JobPlacement is where one job of one replica sits.
type JobPlacement struct {
	Name   string    `json:"name"`
	NodeID string    `json:"nodeId,omitempty"`
	Cores  []int     `json:"cores,omitempty"`
	GPU    *GPUShare `json:"gpu,omitempty"`
	GPUs   []int     `json:"gpus,omitempty"`
	Status string    `json:"status,omitempty"`
	// Message is what the worker said with that status: why a job failed.
	Message string `json:"message,omitempty"`
	// A batch job's exit code (set once it exited) and how many times it
	// was restarted.
	ExitCode *int `json:"exitCode,omitempty"`
	Attempts int  `json:"attempts,omitempty"`
	// AssignmentID names the job's assignment on its node (set when
	// placed, and for a finished batch job the one it last ran as, whose
	// output its worker keeps a while): the id of
	// GET /v1/assignments/{id}/logs.
	AssignmentID string `json:"assignmentId,omitempty"`
}

// Replica is one copy of a bundle's jobs; Index 0 is the primary.
type Replica struct {
	Index int    `json:"index"`
	Role  string `json:"role"`
	State string `json:"state"`
	// Epoch is set on the primary: the bundle's fencing token.
	Epoch uint64         `json:"epoch,omitempty"`
	Jobs  []JobPlacement `json:"jobs"`
}

// Degradation records a relaxed soft rule.
type Degradation struct {
	Code    string    `json:"code"`
	Message string    `json:"message"`
	Since   time.Time `json:"since,omitzero"`
}

// NearestMiss names the node that came closest and the stage that stopped it.
type NearestMiss struct {
	NodeID string `json:"nodeId" row:"1,intern"`
	Stage  string `json:"stage" row:"2,intern"`
	Detail string `json:"detail" row:"3"`
}

// Explain says why something is unplaced (DESIGN §3.7).
type Explain struct {
	NodesEvaluated int            `json:"nodesEvaluated" row:"1"`
	Filtered       map[string]int `json:"filtered" row:"2"`
	NearestMiss    *NearestMiss   `json:"nearestMiss,omitempty" row:"3"`
}

// Bundle is a spec plus its replicated, read-only status.
type Bundle struct {
	BundleSpec

	// EffectivePriority is the band the queue and preemption use: the
	// highest of the bundle's priority and its jobs'.
	EffectivePriority string        `json:"effectivePriority"`
	State             string        `json:"state"`
	CreateIndex       uint64        `json:"createIndex"`
	ModifyIndex       uint64        `json:"modifyIndex"`
	Epoch             uint64        `json:"epoch"`
	Replicas          []Replica     `json:"replicas"`
	Degradations      []Degradation `json:"degradations"`
	Explain           *Explain      `json:"explain,omitempty"`
	// FinishTime is when a batch bundle ended complete or failed;
	// Generation counts in-place launch changes. Rolling is set while a
	// service's launch change is rolled out: some replicas still run an
	// older generation, or a relaunched one has not yet run the leader's
	// settle window; maxUnavailable at a time relaunched, and a replica
	// that is not running (one that cannot be placed too) or settling
	// holds a share.
	FinishTime time.Time `json:"finishTime,omitzero"`
	Generation uint64    `json:"generation,omitempty"`
	Rolling    bool      `json:"rolling,omitempty"`
}

// BundleFilter narrows GET /v1/bundles.
type BundleFilter struct {
	Pool  string
	State string
}

// CreateResponse answers POST /v1/bundles and PUT /v1/bundles/{id}.
type CreateResponse struct {
	Bundle   Bundle    `json:"bundle"`
	Warnings []Finding `json:"warnings"`
	// Created is true for 201 (a new bundle), false for 200 (an identical
	// retry, or a replace). It is not part of the body.
	Created bool `json:"-"`
}

// ValidateResponse answers POST /v1/bundles/validate.
type ValidateResponse struct {
	Valid    bool      `json:"valid"`
	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
}

// PlanResponse answers POST /v1/bundles/plan: the bundle as it would be
// placed, why anything stays unplaced, and the replicas a preemption would
// evict to place it.
type PlanResponse struct {
	Bundle    Bundle         `json:"bundle"`
	Explain   *Explain       `json:"explain,omitempty"`
	Evictions []PlanEviction `json:"evictions,omitempty"`
}

// PlanEviction is a replica of a lower-band bundle that placing the
// planned one would evict (DESIGN §3.5).
type PlanEviction struct {
	BundleID string `json:"bundleId"`
	// Priority is the victim's effective band.
	Priority string `json:"priority"`
	// Role is the evicted replica's: primary or backup.
	Role string `json:"role"`
	// Promoted is true when the victim's backup would take over its
	// evicted primary; a primary evicted without it leaves the bundle
	// pending, a backup evicted leaves it with noBackup.
	Promoted bool     `json:"promoted,omitempty"`
	Jobs     []string `json:"jobs"`
}
