// Package fsm is amserver's replicated state machine: the command set, the
// rowstore state store (internal/rowstore), deterministic Apply, and snapshots.
package fsm

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/amserver/amserver/internal/rowstore"
	"github.com/hashicorp/raft"
)

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// Result is the response of every applied command.
type Result struct {
	Index uint64
	Err   error
	// Value is command-specific: *Bundle for creates and replaces (Created
	// says whether a create made a new one), *PlanResult for plans.
	Value   any
	Created bool
}

// Config wires the FSM's collaborators.
type Config struct {
	Logger *slog.Logger
	// Exprs compiles constraint expressions during validation; may be nil.
	Exprs ExprChecker
	// Eval evaluates constraints when a plan is re-checked; nil skips that
	// check (tests). Every replica must be given the same evaluator.
	Eval ExprEvaluator
}

// FSM applies raft log entries to the state store.
type FSM struct {
	logger *slog.Logger
	exprs  ExprChecker
	eval   ExprEvaluator

	mu sync.RWMutex // guards db across a restore swap
	db *rowstore.DB
	// wmu guards the open write transaction (fsm_open.go); taken before mu.
	wmu      sync.Mutex
	open     *rowstore.Txn
	openLogs []*raft.Log // the commands applied in open, for a redo
	hasOpen  atomic.Bool // open != nil, read without wmu by State
	// visible is the index through which the published version holds
	// every applied command; batchEnd the last index of the last batch
	// ApplyBatch finished. Results reach callers only when their batch is
	// finished, so while visible >= batchEnd a reader needs nothing the
	// open transaction holds and reads without waiting for wmu (State).
	visible  atomic.Uint64
	batchEnd atomic.Uint64
	// configIndex is the index of the last Raft configuration entry
	// applied here (0: none since the start or the last restore): Raft
	// 1.7's configuration reads no longer say it (ConfigIndex).
	configIndex atomic.Uint64
	// readers asks the end of the next batch to commit the open
	// transaction: a reader had to, and on a leader more are coming.
	readers atomic.Bool
	// changeCh is closed and replaced at every change; an atomic pointer,
	// not a field under mu, so that the apply goroutine never takes mu
	// for writing (which waits for every reader inside State and holds
	// new ones back) once per batch.
	changeCh    atomic.Pointer[chan struct{}]
	tables      tableWatches  // per-table channels (watch_tables.go)
	applied     atomic.Uint64 // raft index of the last applied entry
	appliedTerm atomic.Uint64 // and its term (markApplied)
	nodeList    nodeCache     // the latest Nodes("") listing (nodelist.go)
	handlers    [256]handler
}

type handler func(t *tx, body []byte) (any, error)

// New returns an empty FSM.
func New(cfg Config) *FSM {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &FSM{
		logger: cfg.Logger,
		exprs:  cfg.Exprs,
		eval:   cfg.Eval,
		db:     newDB(),
	}
	ch := make(chan struct{})
	f.changeCh.Store(&ch)
	f.registerHandlers()
	return f
}

// registerHandlers fills the dispatch table, keyed by command type byte.
func (f *FSM) registerHandlers() {
	f.handlers[RegisterNodeType] = decoded(f.applyRegisterNode)
	f.handlers[DeregisterNodeType] = decoded(f.applyDeregisterNode)
	f.handlers[NodeStatusType] = decoded(f.applyNodeStatus)
	f.handlers[NodeCordonType] = decoded(f.applyCordon)
	f.handlers[NodeDrainType] = decoded(f.applyDrain)
	f.handlers[UpsertPoolType] = decoded(f.applyUpsertPool)
	f.handlers[DeletePoolType] = decoded(f.applyDeletePool)
	f.handlers[CreateBundleType] = decoded(f.applyCreateBundle)
	f.handlers[ReplaceBundleType] = decoded(f.applyReplaceBundle)
	f.handlers[DeleteBundleType] = decoded(f.applyDeleteBundle)
	f.handlers[PurgeBundleType] = decoded(f.applyPurgeBundle)
	f.handlers[ApplyPlanType] = decoded(f.applyPlan)
	f.handlers[AssignmentStatusType] = decoded(f.applyAssignmentStatus)
	f.handlers[UpsertServiceType] = decoded(f.applyUpsertService)
	f.handlers[DeleteServiceType] = decoded(f.applyDeleteService)
	f.handlers[TimerType] = decoded(f.applyTimer)
	f.handlers[RecordEventType] = decoded(f.applyRecordEvent)
	f.handlers[UpsertACLTokenType] = decoded(f.applyUpsertACLToken)
	f.handlers[DeleteACLTokenType] = decoded(f.applyDeleteACLToken)
	f.handlers[KeyringType] = decoded(f.applyKeyring)
	f.handlers[UpsertSpawnType] = decoded(f.applyUpsertSpawn)
	f.handlers[DeleteSpawnType] = decoded(f.applyDeleteSpawn)
	f.handlers[SpawnBlockedType] = decoded(f.applySpawnBlocked)
	f.handlers[PutTemplateType] = decoded(f.applyPutTemplate)
	f.handlers[DeleteTemplateType] = decoded(f.applyDeleteTemplate)
	f.handlers[SetCapsType] = decoded(f.applySetCapsWire)
	f.handlers[BatchTimerType] = decoded(f.applyBatchTimer)
	f.handlers[ServiceOfferType] = decoded(f.applyServiceOffer)
	f.handlers[RolloutSettledType] = decoded(f.applyRolloutSettled)
}

// decoded adapts a typed handler: decode the msgpack body, then apply.
func decoded[Req any](fn func(t *tx, req *Req) (any, error)) handler {
	return func(t *tx, body []byte) (any, error) {
		var req Req
		if err := decode(body, &req); err != nil {
			panic(&UndecodableError{Err: err})
		}
		return fn(t, &req)
	}
}

// UndecodableError is the panic value for a command whose body cannot be
// decoded: bytes that a correct leader never writes (DESIGN §5).
type UndecodableError struct {
	Type MessageType
	Err  error
}

func (e *UndecodableError) Error() string {
	return fmt.Sprintf("amserver: undecodable %s command: %v", e.Type, e.Err)
}

// ConfigIndex is the index of the last Raft configuration entry this FSM
// applied; 0 when none has been since it started or restored a snapshot,
// whose own configuration index Raft's snapshot metadata holds.
func (f *FSM) ConfigIndex() uint64 { return f.configIndex.Load() }

// Apply implements raft.FSM.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM. Commands apply in one write
// transaction that stays open across entries and batches until someone
// needs what it holds (State, Snapshot, Restore and Preview commit it) or holds
// maxOpenCommands: a transaction per command copies the upper B-tree
// nodes of every table it touches again and pays a commit, where one
// transaction writes the nodes it already copied in place
// (docs/performance.md). Each command stays atomic: one that fails without
// writing leaves the transaction as it was, and one that fails after
// writing (none does today) or panics makes the FSM redo the open
// transaction's earlier commands in a fresh one and drop its writes, which
// is what one transaction per command gives (fsm_open.go).
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	changed := map[string]bool{}
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			if l.Type == raft.LogConfiguration {
				f.configIndex.Store(l.Index)
			}
			f.wmu.Lock()
			f.markApplied(l)
			f.wmu.Unlock()
			continue
		}
		out[i] = f.applyOpen(l, changed)
	}
	if f.readers.Swap(false) {
		f.wmu.Lock()
		f.commitOpen()
		f.wmu.Unlock()
	}
	if len(logs) > 0 {
		f.batchEnd.Store(logs[len(logs)-1].Index)
	}
	f.notify(changed)
	return out
}

// applyOne applies one command in txn, recording the tables it changed;
// dirty reports a failure after the command had written something.
func (f *FSM) applyOne(txn *rowstore.Txn, l *raft.Log, changed map[string]bool) (res *Result, dirty bool) {
	if len(l.Data) == 0 {
		panic(&UndecodableError{Err: fmt.Errorf("empty command at index %d", l.Index)})
	}
	typ := MessageType(l.Data[0])
	h := f.handlers[typ]
	if h == nil {
		if typ&IgnoreUnknownFlag != 0 {
			f.logger.Warn("ignoring unknown command", "type", uint8(typ), "index", l.Index)
			return &Result{Index: l.Index}, false
		}
		panic(&UndecodableError{Type: typ, Err: fmt.Errorf("unknown command type at index %d", l.Index)})
	}
	t := newTx(txn, l.Index)
	value, err := f.dispatch(h, typ, t, l.Data[1:])
	if err != nil {
		return &Result{Index: l.Index, Err: err}, len(t.changed) > 0
	}
	t.finish()
	for table := range t.changed {
		changed[table] = true
	}
	res = &Result{Index: l.Index, Value: value}
	if c, ok := value.(created); ok {
		res.Value, res.Created = c.bundle, c.isNew
	}
	return res, false
}

func (f *FSM) dispatch(h handler, typ MessageType, t *tx, body []byte) (value any, err error) {
	defer func() {
		if r := recover(); r != nil {
			if u, ok := r.(*UndecodableError); ok && u.Type == 0 {
				u.Type = typ
			}
			panic(r) // the caller undoes the transaction (applyOpen, Preview)
		}
	}()
	return h(t, body)
}

// created carries a create's result through the generic handler signature.
type created struct {
	bundle *Bundle
	isNew  bool
}

// State returns a consistent read-only view of the current state.
func (f *FSM) State() *State {
	if f.visible.Load() < f.batchEnd.Load() {
		f.flushOpen()
		f.readers.Store(true)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := newState(f.db)
	st.db, st.nodes = f.db, &f.nodeList
	return st
}

// WatchCh returns a channel closed at the next committed change (or
// restore). Blocking queries wait on it, then compare table indexes: a wake-up
// for an unrelated table costs one index read.
//
// A reader takes the channel before its view (State): a change published
// after the view closes the channel it holds, because notify swaps the
// channel only once the change is visible (batchEnd, or the restored db).
func (f *FSM) WatchCh() <-chan struct{} {
	return *f.changeCh.Load()
}

func (f *FSM) notify(changed map[string]bool) {
	if len(changed) == 0 {
		return
	}
	f.tables.fire(changed)
	f.wake()
}

// wake closes the current watch channel and installs a fresh one.
func (f *FSM) wake() {
	ch := make(chan struct{})
	close(*f.changeCh.Swap(&ch))
}
