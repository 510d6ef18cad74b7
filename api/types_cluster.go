package api

import "time"

// Assignment desired states.
const (
	DesiredRun  = "run"
	DesiredStop = "stop"
)

// Assignment is what a worker must run (or stop): one job of one replica on
// one node, or one node service.
type Assignment struct {
	ID        string `json:"id"`
	BundleID  string `json:"bundleId,omitempty"`
	ServiceID string `json:"serviceId,omitempty"`
	Job       string `json:"job"`
	NodeID    string `json:"nodeId"`
	Role      string `json:"role"`
	Epoch     uint64 `json:"epoch"`
	Desired   string `json:"desired"`
	Status    string `json:"status"`
	Message   string `json:"message,omitempty"`
	Launch    Launch `json:"launch"`
	// Runtime is what the worker runs the launch with: the template's
	// runtime, or the legacy driver.
	Runtime  string  `json:"runtime,omitempty"`
	Capacity float64 `json:"capacity"`
	// MemoryMiB is the reserved request; MemoryLimitMiB the limit the
	// driver enforces (0: none).
	MemoryMiB      int64     `json:"memoryMiB,omitempty"`
	MemoryLimitMiB int64     `json:"memoryLimitMiB,omitempty"`
	Cores          []int     `json:"cores,omitempty"`
	GPU            *GPUShare `json:"gpu,omitempty"`
	GPUs           []int     `json:"gpus,omitempty"`
	// Generation moves when the job must restart where it runs (an
	// in-place launch change, a batch restart): the worker stops the job
	// and starts it again with this launch. RunOnce marks a batch job: run
	// to completion, report its exit, do not restart it. ExitCode is set
	// when status is exited.
	Generation uint64 `json:"generation,omitempty"`
	RunOnce    bool   `json:"runOnce,omitempty"`
	ExitCode   *int   `json:"exitCode,omitempty"`

	CreateIndex uint64 `json:"createIndex"`
	ModifyIndex uint64 `json:"modifyIndex"`
}

// AssignmentStatus is a worker's report, the body of
// PUT /v1/nodes/{id}/assignments/{assignmentId}/status. ExitCode goes with
// state exited (a batch job that ran to its end); Generation is the
// assignment generation the worker ran, so a late exit of an earlier run
// is not taken for the restarted one's.
type AssignmentStatus struct {
	State      string `json:"state"` // running | stopped | failed | exited
	Message    string `json:"message,omitempty"`
	ExitCode   *int   `json:"exitCode,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

// Event types (DESIGN §7).
const (
	EventBundleCreated     = "bundleCreated"
	EventBundlePlaced      = "bundlePlaced"
	EventBundleUnplaceable = "bundleUnplaceable"
	EventBundleDeleted     = "bundleDeleted"
	EventFailover          = "failover"
	// EventPromoted is never written: a promotion is a failover event.
	//
	// Deprecated: filter on EventFailover.
	EventPromoted    = "promoted"
	EventEvicted     = "evicted"
	EventDegraded    = "degraded"
	EventHealed      = "healed"
	EventNodeStatus  = "nodeStatus"
	EventNodeDrained = "nodeDrained"
	// EventDrainWaits: a draining node keeps a bundle that has nowhere to
	// go (written when it starts waiting or its reason changes).
	EventDrainWaits    = "drainWaits"
	EventServerJoined  = "serverJoined"
	EventServerRemoved = "serverRemoved"
	// Bundle kinds: a service's count changed; a batch bundle finished
	// (complete or failed); a batch job restarted after a non-zero exit;
	// a launch changed in place (a new assignment generation).
	EventBundleScaled   = "bundleScaled"
	EventBundleFinished = "bundleFinished"
	EventJobRestarted   = "jobRestarted"
	EventBundleUpdated  = "bundleUpdated"
	// Elastic pools: a node asked of the provisioner, one that never
	// registered in time, one being given back, one given back.
	EventNodeProvisioning   = "nodeProvisioning"
	EventProvisionTimedOut  = "provisionTimedOut"
	EventNodeDeprovisioning = "nodeDeprovisioning"
	EventNodeDeprovisioned  = "nodeDeprovisioned"
	// Templates: an archive became a name's latest version; a name and its
	// versions were deleted.
	EventTemplatePushed  = "templatePushed"
	EventTemplateDeleted = "templateDeleted"
	// Node services: an apply changed a service's launch, request or
	// provides, which its instances took (relaunched in place or stopped
	// to be placed again).
	EventServiceUpdated = "serviceUpdated"
)

// EventTypes are the types of event the servers write (a test holds it to
// the code that writes them), for a filter to check a type against.
var EventTypes = []string{
	EventBundleCreated, EventBundlePlaced, EventBundleUnplaceable, EventBundleDeleted,
	EventBundleScaled, EventBundleUpdated, EventBundleFinished, EventJobRestarted,
	EventFailover, EventEvicted, EventDegraded, EventHealed,
	EventNodeStatus, EventNodeDrained, EventDrainWaits, EventServerJoined, EventServerRemoved,
	EventNodeProvisioning, EventProvisionTimedOut, EventNodeDeprovisioning, EventNodeDeprovisioned,
	EventTemplatePushed, EventTemplateDeleted, EventServiceUpdated,
}

// Event is one line of GET /v1/events.
type Event struct {
	Index    uint64    `json:"index"`
	Time     time.Time `json:"time,omitzero"`
	Type     string    `json:"type"`
	BundleID string    `json:"bundleId,omitempty"`
	NodeID   string    `json:"nodeId,omitempty"`
	Message  string    `json:"message"`
}

// Leader answers GET /v1/status/leader.
type Leader struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr"`
}

// Peer is one server of the Raft configuration.
type Peer struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
	// Status is the answering server's gossip view of this one: alive,
	// suspect, dead or left, or unknown when it knows no such member. Raft
	// keeps a server that died in its configuration, a follower by name.
	Status string `json:"status"`
}

// PeerUnknown is a Peer's Status when the answering server's gossip has no
// member of that name.
const PeerUnknown = "unknown"

// Health answers GET /v1/health.
type Health struct {
	Status      string `json:"status"` // "ok" whenever the server answers
	ID          string `json:"id"`
	IsLeader    bool   `json:"isLeader"`
	KnownLeader bool   `json:"knownLeader"`
	Leader      string `json:"leader,omitempty"` // the known leader's id
	Index       uint64 `json:"index"`            // last change index of the local state
	Peers       int    `json:"peers"`            // voters and non-voters in the Raft configuration
}

// Member is one gossip member as the serving server sees it.
type Member struct {
	Name     string            `json:"name"`
	Address  string            `json:"address"`
	Role     string            `json:"role"`
	Status   string            `json:"status"` // alive | suspect | dead | left
	Labels   map[string]string `json:"labels"` // az, cloud, pool and the member's tags
	RaftAddr string            `json:"raftAddr,omitempty"`
	HTTPAddr string            `json:"httpAddr,omitempty"`
	Since    time.Time         `json:"since,omitzero"`
	LastSeen time.Time         `json:"lastSeen,omitzero"`
}

// RaftConfiguration answers GET /v1/operator/raft.
type RaftConfiguration struct {
	Servers           []Peer  `json:"servers"`
	Leader            *Leader `json:"leader,omitempty"`
	ServerID          string  `json:"serverId"` // the server that answered
	State             string  `json:"state"`    // its raft state
	Term              uint64  `json:"term"`
	LastIndex         uint64  `json:"lastIndex"`
	CommitIndex       uint64  `json:"commitIndex"`
	AppliedIndex      uint64  `json:"appliedIndex"`
	LastSnapshotIndex uint64  `json:"lastSnapshotIndex"`
	ConfigIndex       uint64  `json:"configIndex"`
	// LogStore is the answering server's Raft log store, wal or bolt
	// (operations.md §4.2); absent for a server that keeps it in memory.
	LogStore string `json:"logStore,omitempty"`
}

// TransferLeadershipRequest is the optional body of
// POST /v1/operator/raft/transfer-leadership; an empty ID lets Raft choose.
type TransferLeadershipRequest struct {
	ID string `json:"id,omitempty"`
}

// StateDigest is one server's own view of its replicated state, never
// forwarded: GET /v1/operator/digest. Two servers at the same Index must
// report the same Digest; the fault suite checks that after every heal.
type StateDigest struct {
	ServerID     string `json:"serverId"`
	Index        uint64 `json:"index"`        // last change index of the local state
	AppliedIndex uint64 `json:"appliedIndex"` // last Raft entry applied locally
	Digest       string `json:"digest"`       // SHA-256 over every table's rows, hex
}
