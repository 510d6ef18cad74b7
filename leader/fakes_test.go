package leader

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// tb is what the fakes need of a test: *testing.T and *rapid.T have it.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// fsmRig is the fake Store: a real FSM to which each command applies at
// once as one raft.Log with the next index. What duties propose through
// Apply is recorded; what a test sets up through ok is not.
type fsmRig struct {
	t tb
	f *fsm.FSM

	mu      sync.Mutex // duties apply from several goroutines (applyAll)
	index   uint64     // last log index written, applied or in doubt
	applied uint64
	// inDoubt are entries whose Apply reported ErrOutcomeUnknown: in the
	// log, not yet applied, until settle or the next successful Apply.
	inDoubt   []*raft.Log
	proposed  []proposal
	fail      []error // returned by the next Applies instead of applying
	notLeader bool
}

// proposal is one command a duty proposed and what came of it.
type proposal struct {
	typ  fsm.MessageType
	body any
	res  *fsm.Result // nil when Apply failed
	err  error
}

var _ Store = (*fsmRig)(nil)

func newFSMRig(t tb) *fsmRig { return &fsmRig{t: t, f: fsm.New(fsm.Config{})} }

func (r *fsmRig) State() *fsm.State        { return r.f.State() }
func (r *fsmRig) WatchCh() <-chan struct{} { return r.f.WatchCh() }

func (r *fsmRig) AppliedIndex() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

func (r *fsmRig) LastIndex() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index
}

func (r *fsmRig) IsLeader() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.notLeader
}

// Apply records the command, then fails it as failNext asked, or applies
// it after any entry in doubt (the log commits in order, so a later entry
// committing means the earlier one did).
func (r *fsmRig) Apply(_ context.Context, typ fsm.MessageType, body any) (*fsm.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := proposal{typ: typ, body: body}
	defer func() { r.proposed = append(r.proposed, p) }()
	data, err := fsm.Encode(typ, body)
	if err != nil {
		r.t.Errorf("duty proposed an unencodable %s: %v", typ, err)
		p.err = err
		return nil, err
	}
	switch {
	case len(r.fail) > 0:
		p.err, r.fail = r.fail[0], r.fail[1:]
	case r.notLeader:
		p.err = raftstore.ErrNotLeader
	}
	if errors.Is(p.err, raftstore.ErrOutcomeUnknown) {
		r.index++
		r.inDoubt = append(r.inDoubt, &raft.Log{Index: r.index, Type: raft.LogCommand, Data: data})
	}
	if p.err != nil {
		return nil, p.err
	}
	r.settleLocked(true)
	p.res = r.applyLocked(data)
	return p.res, nil
}

// setLeader says whether this server leads; a follower's Apply fails with
// ErrNotLeader.
func (r *fsmRig) setLeader(leader bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notLeader = !leader
}

// failNext makes the next Applies return errs, one each, in order. An
// ErrOutcomeUnknown leaves the entry in doubt in the log (see settle).
func (r *fsmRig) failNext(errs ...error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = append(r.fail, errs...)
}

// settle decides the entries in doubt: committed, or lost (applied as
// no-ops, as a new leader's entries would take their indexes).
func (r *fsmRig) settle(commit bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked(commit)
}

func (r *fsmRig) settleLocked(commit bool) {
	for _, l := range r.inDoubt {
		if !commit {
			l.Type = raft.LogNoop
		}
		r.f.Apply(l)
		r.applied = l.Index
	}
	r.inDoubt = nil
}

func (r *fsmRig) applyLocked(data []byte) *fsm.Result {
	r.index++
	res := r.f.Apply(&raft.Log{Index: r.index, Type: raft.LogCommand, Data: data}).(*fsm.Result)
	r.applied = r.index
	return res
}

// ok applies a setup command, which must succeed, without recording it.
func (r *fsmRig) ok(typ fsm.MessageType, body any) *fsm.Result {
	r.t.Helper()
	data, err := fsm.Encode(typ, body)
	if err != nil {
		r.t.Fatalf("%s: %v", typ, err)
	}
	r.mu.Lock()
	r.settleLocked(true) // the log is in order: what was in doubt is before
	res := r.applyLocked(data)
	r.mu.Unlock()
	if res.Err != nil {
		r.t.Fatalf("%s: %v", typ, res.Err)
	}
	return res
}

// take returns what duties proposed since the last take.
func (r *fsmRig) take() []proposal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.proposed
	r.proposed = nil
	return out
}

// typesOf lists proposals' command types, for messages and comparisons.
func typesOf(ps []proposal) []fsm.MessageType {
	out := make([]fsm.MessageType, len(ps))
	for i, p := range ps {
		out[i] = p.typ
	}
	return out
}

// fakeMembership is a gossip view the test sets member by member.
type fakeMembership struct {
	mu      sync.Mutex
	members map[string]gossip.Member
}

func (m *fakeMembership) set(list ...gossip.Member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.members == nil {
		m.members = map[string]gossip.Member{}
	}
	for _, mem := range list {
		m.members[mem.Name] = mem
	}
}

func (m *fakeMembership) Members() []gossip.Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]gossip.Member, 0, len(m.members))
	for _, name := range slices.Sorted(maps.Keys(m.members)) {
		out = append(out, m.members[name])
	}
	return out
}

func (m *fakeMembership) Member(name string) (gossip.Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.members[name]
	return mem, ok
}

// fakeVoters is a Raft configuration that records every change asked of
// it; refuse makes AddVoter and RemoveServer fail.
type fakeVoters struct {
	mu      sync.Mutex
	voters  map[string]string
	calls   []string // "add id@addr" or "remove id", refused ones too
	refuse  error
	listErr error
}

func (v *fakeVoters) Voters() (map[string]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.voters), v.listErr
}

func (v *fakeVoters) AddVoter(id, addr string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, "add "+id+"@"+addr)
	if v.refuse != nil {
		return v.refuse
	}
	v.voters[id] = addr
	return nil
}

func (v *fakeVoters) RemoveServer(id string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, "remove "+id)
	if v.refuse != nil {
		return v.refuse
	}
	delete(v.voters, id)
	return nil
}

func (v *fakeVoters) takeCalls() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.calls
	v.calls = nil
	return out
}

// fakeProvisioning records provisioner calls by spawn id and makes none;
// Deleted answers what the test set in deleted.
type fakeProvisioning struct {
	mu      sync.Mutex
	creates []string
	deletes []string
	deleted map[string]time.Time
	failed  map[string]string      // "op/id" → why the call was given up
	wanted  map[string]func() bool // the last call's wanted, by spawn
	kick    chan struct{}
}

var _ Provisioning = (*fakeProvisioning)(nil)

func newFakeProvisioning() *fakeProvisioning {
	return &fakeProvisioning{deleted: map[string]time.Time{}, failed: map[string]string{}, wanted: map[string]func() bool{},
		kick: make(chan struct{})}
}

func (p *fakeProvisioning) Create(sp *fsm.Spawn, _ *fsm.Provisioner, _, _ []string, wanted func() bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creates = append(p.creates, sp.ID)
	p.wanted[sp.ID] = wanted
}

func (p *fakeProvisioning) Delete(sp *fsm.Spawn, _ *fsm.Provisioner, wanted func() bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deletes = append(p.deletes, sp.ID)
	p.wanted[sp.ID] = wanted
}

func (p *fakeProvisioning) Deleted(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.deleted[id]
	return at, ok
}

func (p *fakeProvisioning) Failed(op, id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	why, ok := p.failed[op+"/"+id]
	return why, ok
}

// setFailed makes the spawn's op call look given up.
func (p *fakeProvisioning) setFailed(op, id, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[op+"/"+id] = why
}

func (p *fakeProvisioning) Forget(keep func(id string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	maps.DeleteFunc(p.deleted, func(id string, _ time.Time) bool { return !keep(id) })
}

func (p *fakeProvisioning) Kick() <-chan struct{} { return p.kick }
func (p *fakeProvisioning) Wait()                 {}

func (p *fakeProvisioning) setDeleted(id string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted[id] = at
}

// takeCalls returns the create and delete calls since the last take.
func (p *fakeProvisioning) takeCalls() (creates, deletes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	creates, deletes = p.creates, p.deletes
	p.creates, p.deletes = nil, nil
	return creates, deletes
}

// TestFakeStore: the rig behaves as the duties assume a Store does: a
// change closes WatchCh, a failed Apply changes nothing, and an entry of
// unknown outcome is in the log but not applied until settled.
func TestFakeStore(t *testing.T) {
	r := newFSMRig(t)
	ctx := context.Background()
	pool := &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p"}}
	watch := r.WatchCh()
	if res, err := r.Apply(ctx, fsm.UpsertPoolType, pool); err != nil || res.Err != nil {
		t.Fatalf("apply: %v %v", err, res)
	}
	select {
	case <-watch:
	default:
		t.Fatal("WatchCh not closed by a change")
	}
	r.failNext(raftstore.ErrNotLeader, raftstore.ErrOutcomeUnknown)
	if _, err := r.Apply(ctx, fsm.DeletePoolType, &fsm.DeletePoolRequest{Name: "p"}); !errors.Is(err, raftstore.ErrNotLeader) {
		t.Fatalf("first failure: %v", err)
	}
	if _, err := r.Apply(ctx, fsm.DeletePoolType, &fsm.DeletePoolRequest{Name: "p"}); !errors.Is(err, raftstore.ErrOutcomeUnknown) {
		t.Fatalf("second failure: %v", err)
	}
	if r.State().Pool("p") == nil || r.LastIndex() != r.AppliedIndex()+1 {
		t.Fatalf("pool %v, last %d applied %d: want the pool and one entry in doubt",
			r.State().Pool("p"), r.LastIndex(), r.AppliedIndex())
	}
	r.settle(true)
	if r.State().Pool("p") != nil || r.LastIndex() != r.AppliedIndex() {
		t.Fatal("the entry in doubt did not commit when settled")
	}
	if got := typesOf(r.take()); len(got) != 3 {
		t.Fatalf("recorded %v, want the three proposals", got)
	}
}
