package fsm

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/amserver/amserver/ledger"
)

// MessageType is the first byte of every Raft command. The numbering is
// append-only: never reuse or renumber a value, or old logs replay wrongly.
type MessageType uint8

// IgnoreUnknownFlag marks a command that older servers may skip (DESIGN §5).
const IgnoreUnknownFlag MessageType = 0x80

// Command types. Append new ones at the end.
const (
	RegisterNodeType     MessageType = 1
	DeregisterNodeType   MessageType = 2
	NodeStatusType       MessageType = 3
	NodeCordonType       MessageType = 4
	NodeDrainType        MessageType = 5
	UpsertPoolType       MessageType = 6
	DeletePoolType       MessageType = 7
	CreateBundleType     MessageType = 8
	ReplaceBundleType    MessageType = 9
	DeleteBundleType     MessageType = 10
	PurgeBundleType      MessageType = 11
	ApplyPlanType        MessageType = 12
	AssignmentStatusType MessageType = 13
	UpsertServiceType    MessageType = 14
	DeleteServiceType    MessageType = 15
	TimerType            MessageType = 16
	RecordEventType      MessageType = 17
	UpsertACLTokenType   MessageType = 18
	DeleteACLTokenType   MessageType = 19
	KeyringType          MessageType = 20
	UpsertSpawnType      MessageType = 21
	DeleteSpawnType      MessageType = 22
	SpawnBlockedType     MessageType = 23
	PutTemplateType      MessageType = 24
	DeleteTemplateType   MessageType = 25
	// 26..29 are left to other branches' commands.
	SetCapsType MessageType = 30
	// 34..39 are the bundle kinds' (issue 18).
	BatchTimerType MessageType = 34
	// ServiceOfferType offers (or withdraws) a lazy node service's
	// capabilities on nodes (DESIGN §2.5).
	ServiceOfferType MessageType = 40
	// RolloutSettledType confirms a rollout's relaunched replicas
	// (RolloutSettledRequest).
	RolloutSettledType MessageType = 41
)

// Command levels: what a server applies, counted from the last release
// (f783f6f), which is level 1. A server advertises its CommandLevel in
// gossip; a leader (and the API handlers on it) uses a level's command
// types and fields only once every server of the Raft configuration
// applies that level, since an old follower panics at a command type it
// does not know and ignores a field it does not know, and the replicas'
// states would differ. Raise CommandLevel, and add a level here, with the
// first command type or field of a release that old servers cannot apply.
const (
	// LevelRolloutSettle: RolloutSettledType, the SettleRollout fields of
	// ReplaceBundleRequest and AssignmentStatusRequest,
	// UpsertServiceRequest.Update, Plan.DrainWaits and
	// Plan.DegradedRecount (an old follower would not write their events).
	LevelRolloutSettle = 2

	// CommandLevel is the level this binary applies.
	CommandLevel = LevelRolloutSettle
)

// String names a command type for logs and errors.
func (t MessageType) String() string {
	if name, ok := messageTypeNames[t]; ok {
		return name
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

var messageTypeNames = map[MessageType]string{
	RegisterNodeType: "RegisterNode", DeregisterNodeType: "DeregisterNode",
	NodeStatusType: "NodeStatus", NodeCordonType: "NodeCordon", NodeDrainType: "NodeDrain",
	UpsertPoolType: "UpsertPool", DeletePoolType: "DeletePool",
	CreateBundleType: "CreateBundle", ReplaceBundleType: "ReplaceBundle",
	DeleteBundleType: "DeleteBundle", PurgeBundleType: "PurgeBundle",
	ApplyPlanType: "ApplyPlan", AssignmentStatusType: "AssignmentStatus",
	UpsertServiceType: "UpsertService", DeleteServiceType: "DeleteService",
	TimerType: "Timer", RecordEventType: "RecordEvent",
	UpsertACLTokenType: "UpsertACLToken", DeleteACLTokenType: "DeleteACLToken",
	KeyringType:     "Keyring",
	UpsertSpawnType: "UpsertSpawn", DeleteSpawnType: "DeleteSpawn", SpawnBlockedType: "SpawnBlocked",
	PutTemplateType: "PutTemplate", DeleteTemplateType: "DeleteTemplate",
	SetCapsType: "SetCaps", BatchTimerType: "BatchTimer",
	ServiceOfferType: "ServiceOffer", RolloutSettledType: "RolloutSettled",
}

// RegisterNodeRequest registers a node or replaces its inventory.
type RegisterNodeRequest struct {
	Node Node
	Now  int64
}

// DeregisterNodeRequest removes a node; Force releases whatever it holds.
type DeregisterNodeRequest struct {
	NodeID string
	Force  bool
	Now    int64
}

// NodeStatusRequest is a status transition observed through gossip by the
// leader, with the failure-domain labels the node publishes there.
type NodeStatusRequest struct {
	NodeID string
	Status string
	AZ     string
	Cloud  string
	Now    int64
}

// NodeFlagRequest sets or clears cordon (NodeCordonType) or drain (NodeDrainType).
type NodeFlagRequest struct {
	NodeID string
	On     bool
	Now    int64
}

// UpsertPoolRequest creates or replaces a pool's settings.
type UpsertPoolRequest struct {
	Pool Pool
}

// DeletePoolRequest removes an unused pool.
type DeletePoolRequest struct {
	Name string
}

// CreateBundleRequest creates a bundle; an identical retry is not an error.
type CreateBundleRequest struct {
	Spec BundleSpec
	Now  int64
}

// ReplaceBundleRequest replaces a bundle's spec; CAS, when non-zero, must
// equal the bundle's modifyIndex.
type ReplaceBundleRequest struct {
	Spec BundleSpec
	CAS  uint64
	Now  int64
	// Rollout: a replace that leaves a service's launch alone moves its
	// pending rollout on, as a scale-down or a larger maxUnavailable may
	// have freed its budget (nothing else would: no replica reports). A
	// command without it, committed by an older leader, is applied as it
	// was then, so that a replica replaying it reaches the others' state.
	Rollout bool `json:",omitempty"`
	// RelaunchUnavailable: a rollout this replace starts or moves on
	// relaunches the replicas that are not available first, without
	// waiting for them (tx.relaunchUnavailable). New leaders set it.
	RelaunchUnavailable bool `json:",omitempty"`
	// SettleRollout: a replica this replace's rollout relaunches counts
	// unavailable until the leader has seen it run for its settle window
	// (RolloutSettledRequest), not from its first running report. New
	// leaders set it.
	SettleRollout bool `json:",omitempty"`
}

// DeleteBundleRequest starts the stop-then-delete saga.
type DeleteBundleRequest struct {
	ID  string
	Now int64
}

// PurgeBundleRequest removes a deleting bundle and everything it holds.
type PurgeBundleRequest struct {
	ID     string
	Reason string
	Now    int64
}

// AssignmentStatusRequest is a worker's report on one assignment.
type AssignmentStatusRequest struct {
	NodeID       string
	AssignmentID string
	Status       string
	Message      string
	Now          int64
	// ExitCode is the process's exit code when Status is exited, and
	// Generation the assignment generation that ran.
	ExitCode   int    `json:",omitempty"`
	Generation uint64 `json:",omitempty"`
	// RelaunchUnavailable and SettleRollout: as ReplaceBundleRequest's,
	// for the rollout a running report moves on.
	RelaunchUnavailable bool `json:",omitempty"`
	SettleRollout       bool `json:",omitempty"`
}

// RolloutSettledRequest names the settling replicas (Bundle.Settling) the
// leader has seen run for its settle window; the rollout then counts them
// available and moves on. Each names the highest modify index of the
// replica's assignments when the leader started timing it: one written
// since (a failed report, a relaunch) is a run the leader has not timed,
// and its entry changes nothing.
type RolloutSettledRequest struct {
	Now     int64
	Settled []SettledReplica
}

// SettledReplica is one replica of RolloutSettledRequest.
type SettledReplica struct {
	BundleID string
	Slot     int
	Index    uint64
}

// BatchTimerRequest fires batch timers at the leader's clock: restarts of
// jobs whose restart delay has passed, and the deletion of finished
// bundles whose ttlAfterFinished has. The FSM checks each against Now, so
// a stale or early command changes nothing.
type BatchTimerRequest struct {
	Now     int64
	Restart []SlotJobRef
	Expire  []string
}

// SlotJobRef names one job of one replica of a bundle.
type SlotJobRef struct {
	BundleID string
	Slot     int
	Job      string
}

// UpsertServiceRequest creates or replaces a node service.
type UpsertServiceRequest struct {
	Service NodeService
	// Update: the replace reaches the running instances (applyServiceUpdate),
	// as an operator's apply means: a new launch is relaunched in place, a
	// new request (requirements, consumes) stops them to be placed again
	// with it, new provides show on their nodes. A command without it,
	// committed by an older leader, only rewrites the record, as it did
	// then, so that a replica replaying it reaches the others' state. The
	// API sets it.
	Update bool `json:",omitempty"`
}

// ServiceOfferRequest adds lazy services' capabilities to nodes where they
// may start, or withdraws them (any service's) from nodes.
type ServiceOfferRequest struct {
	Offers []ServiceOffer
}

// ServiceOffer is one service on one node.
type ServiceOffer struct {
	ServiceID string
	Node      string
	Withdraw  bool
}

// DeleteServiceRequest removes a node service and stops its assignments.
type DeleteServiceRequest struct {
	ID string
}

// TimerRequest carries the leader's clock and the bundles whose startAt
// (Start) or stopAt (Stop) the leader believes due.
type TimerRequest struct {
	Now   int64
	Start []string
	Stop  []string
}

// RecordEventRequest records a cluster event that no other command carries:
// Raft membership changes the leader made (serverJoined, serverRemoved).
type RecordEventRequest struct {
	Type    string
	NodeID  string
	Message string
	Now     int64
}

// Plan is a batch of placement decisions for many bundles. Each part commits
// all or nothing; the FSM re-checks every part against the ledger.
type Plan struct {
	Now   int64
	Parts []PlanPart
	// Basis is the index of the state the plan was computed on. A bundle
	// the plan leaves unplaceable records it as its AttemptIndex, so a
	// node that became ready while the plan was in flight still makes the
	// placer try the bundle again. 0 (older leaders) means the plan's index.
	Basis uint64
	// Lost are the nodes a failover plan treats as down or left. A part
	// that releases a reservation on one of them is rejected when the node
	// is ready or suspect again at apply: it came back while the plan was
	// in flight, and its jobs are not to be failed over. Plans of older
	// leaders carry none and apply as they did.
	Lost []string `json:",omitempty"`
	// DrainWaits are bundles a drain could not move off their node, each
	// announced (a drainWaits event) when it starts waiting or its reason
	// changes: otherwise only the leader's log said why a drain stalls.
	// Level LevelRolloutSettle.
	DrainWaits []DrainWait `json:",omitempty"`
	// DegradedRecount: a service that stays short of replicas while the
	// plan changes how many it has complete writes its degraded event
	// again, with the new count. Otherwise the event came only when the
	// shortfall began, and a service losing a second replica, or getting
	// one back, changed its message silently. Level LevelRolloutSettle.
	DegradedRecount bool `json:",omitempty"`
}

// DrainWait is a bundle a draining node keeps, and why it cannot move.
type DrainWait struct {
	Node, Bundle, Why string
}

// PlanPart groups updates that must commit together, such as a preemptor's
// placement and the evictions that make room for it.
type PlanPart struct {
	Updates  []BundleUpdate
	Services []ServicePlacement
}

// SlotJob names one job of one replica slot.
type SlotJob struct {
	Slot int
	Job  string
}

// Place puts one job of one replica slot on a node with a concrete grant.
type Place struct {
	Slot  int
	Job   string
	Node  string
	Grant ledger.Grant
}

// BundleUpdate changes one bundle's placement. Releases apply before
// placements, so a job can move in one update.
type BundleUpdate struct {
	BundleID string
	// Promote swaps the replicas so the backup becomes primary; epoch advances.
	Promote bool
	Release []SlotJob
	Place   []Place
	// SetDegradations replaces the degradation list with Degradations.
	SetDegradations bool
	Degradations    []Degradation
	Explain         *Explain
	// Preemptor names the bundle whose placement evicts this one.
	Preemptor string
	// Reason is a short human explanation for events (failover, drain, heal).
	Reason string
}

// ServicePlacement places (or, with Stop, stops) a node service on a node.
type ServicePlacement struct {
	ServiceID string
	Node      string
	Grant     ledger.Grant
	Stop      bool
}

var msgpackHandle = &codec.MsgpackHandle{}

// A msgpack encoder or decoder is a few kilobytes of buffers and state
// that NewEncoder and NewDecoderBytes allocate afresh: per command that was
// a tenth of a create's apply allocations, which the state's garbage
// collector then paid for. They are reset and reused instead; Reset and
// ResetBytes clear everything a previous command left.
var (
	encoders = sync.Pool{New: func() any { return codec.NewEncoder(nil, msgpackHandle) }}
	decoders = sync.Pool{New: func() any { return codec.NewDecoderBytes(nil, msgpackHandle) }}
)

// Encode builds a Raft command: the type byte, then the msgpack body.
func Encode(t MessageType, body any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	enc := encoders.Get().(*codec.Encoder)
	enc.Reset(&buf)
	err := enc.Encode(body)
	enc.Reset(nil) // drop the buffer: the caller owns it
	encoders.Put(enc)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", t, err)
	}
	return buf.Bytes(), nil
}

func decode(body []byte, out any) error {
	dec := decoders.Get().(*codec.Decoder)
	dec.ResetBytes(body)
	err := dec.Decode(out)
	dec.ResetBytes(nil) // drop the command's bytes
	decoders.Put(dec)
	return err
}
