// Package leader is what the Raft leader does besides replicating: the
// control loops of DESIGN §6 (placement, failover, reconciling gossip into
// node status and the voter set, drain, node services, start/stop timers,
// the deletion saga, rollouts' settle windows, elastic planning). Each
// duty rebuilds its work from the replicated state when a term starts and
// keeps no truth only in memory.
// Duties reach the rest of the server only through the narrow interfaces
// declared here (Store, Clock, Membership, Voters, Provisioning), so each is
// unit-tested with fakes: no Raft, no gossip, no sleeps.
package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/scheduler"
)

// Store is the replicated state as a duty sees it: a read view, a watch,
// and the one way to change it, a command through Raft.
type Store interface {
	// State is a consistent read view of the local FSM.
	State() *fsm.State
	// WatchCh is closed at the next FSM change.
	WatchCh() <-chan struct{}
	AppliedIndex() uint64
	LastIndex() uint64
	IsLeader() bool
	// Apply commits one command. Errors wrap raftstore's sentinels; a nil
	// error means it was applied and its own failure is in Result.Err.
	Apply(ctx context.Context, typ fsm.MessageType, body any) (*fsm.Result, error)
}

// Clock is where the leader reads time, which it stamps into commands.
type Clock interface {
	Now() time.Time
}

// Membership is the gossip view: who is reachable and in which failure
// domain.
type Membership interface {
	Members() []gossip.Member
	Member(name string) (gossip.Member, bool)
}

// Voters is the Raft configuration the reconciler keeps in line with
// gossip.
type Voters interface {
	// Voters maps every configured server's id to its Raft address.
	Voters() (map[string]string, error)
	AddVoter(id, addr string) error
	RemoveServer(id string) error
}

// Duty is one leader control loop.
type Duty interface {
	Name() string
	Run(ctx context.Context)
}

// Config is what the duties share.
type Config struct {
	// NodeID is this server: the reconciler never removes itself.
	NodeID string
	Store  Store
	Clock  Clock
	// Membership is nil without gossip (tests): nothing is reconciled.
	Membership Membership
	// Voters is nil when the voter set is not managed from gossip.
	Voters Voters
	// Wake receives a value when gossip changed: reconcile now.
	Wake   <-chan struct{}
	Engine *scheduler.Engine
	// Metrics observe placement and failover (no-ops when unset).
	Metrics Metrics
	Logger  *slog.Logger

	// DeleteTimeout bounds the stop-then-delete saga (DESIGN §4).
	DeleteTimeout time.Duration
	// DeadServerCleanup is how long gossip must report a server dead
	// before it leaves the Raft configuration; never below QuorumSize.
	DeadServerCleanup time.Duration
	QuorumSize        int
	// UnseenNodeDown is how long the leader waits for gossip to see a
	// node an earlier leader saw (ready or suspect), from when it first
	// found it missing (its term's start, or a snapshot restore), before it
	// writes the node down (reconcile.go); 0 means a minute, negative never.
	UnseenNodeDown time.Duration
	// RolloutSettle is how long a replica a service rollout relaunched
	// must run before the rollout counts it available (rollouts.go); 0
	// or less means 5 s.
	RolloutSettle time.Duration
	// ServersApply reports whether every server of the Raft configuration
	// applies replicated commands of level (fsm.CommandLevel); the duties
	// propose a level's commands only then. Nil: every server does (tests).
	ServersApply func(level int) bool

	Elastic ElasticConfig
	// ConfigTokens are the ACL tokens from configuration, written by every
	// new leader before it serves.
	ConfigTokens []fsm.ACLToken
}

// Leader holds the duties' shared collaborators.
type Leader struct {
	cfg     Config
	store   Store
	clock   Clock
	engine  *scheduler.Engine
	log     *slog.Logger
	metrics Metrics
	tokens  configTokens
}

// New checks cfg and fills its defaults.
func New(cfg Config) *Leader {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Engine == nil {
		cfg.Engine = scheduler.NewEngine(scheduler.Options{})
	}
	if cfg.DeleteTimeout <= 0 {
		cfg.DeleteTimeout = 60 * time.Second
	}
	if cfg.UnseenNodeDown == 0 {
		cfg.UnseenNodeDown = defaultUnseenNodeDown
	}
	if cfg.RolloutSettle <= 0 {
		cfg.RolloutSettle = defaultRolloutSettle
	}
	if cfg.ServersApply == nil {
		cfg.ServersApply = func(int) bool { return true }
	}
	cfg.Metrics.setDefaults()
	cfg.Elastic.setDefaults()
	l := &Leader{
		cfg: cfg, store: cfg.Store, clock: cfg.Clock, engine: cfg.Engine,
		log: cfg.Logger, metrics: cfg.Metrics,
	}
	l.SetConfigTokens(cfg.ConfigTokens)
	return l
}

// Duties are the leader's control loops (DESIGN §6), made anew per term.
func (l *Leader) Duties() []Duty {
	return []Duty{
		&reconciler{l: l},
		&placer{l: l},
		&failover{l: l},
		&drainer{l: l},
		&timers{l: l},
		&services{l: l},
		&deleter{l: l},
		&rollouts{l: l},
		&elastic{l: l},
	}
}

// Run runs duties until ctx ends and every one of them has returned.
func Run(ctx context.Context, duties []Duty) {
	done := make(chan struct{}, len(duties))
	for _, d := range duties {
		go func(d Duty) {
			defer func() { done <- struct{}{} }()
			d.Run(ctx)
		}(d)
	}
	for range duties {
		<-done
	}
}

// waitChange blocks until the state changes, d passes, or ctx ends; false
// when ctx ended. Duties use it so that an idle cluster costs nothing.
func waitChange(ctx context.Context, watch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-watch:
	case <-t.C:
	}
	return true
}

// dutyGap is the least time from one pass of a background duty (deletion,
// failover, drain, node services, rollouts, reconcile) to its next while
// commits keep waking it. Every commit closes the watch channel, so under
// a stream of writes each of them read the state and ran a pass per
// commit, on the leader, just when the commit's answer, the next entry's
// replication and the followers' applies wanted the same cores: at one
// writer, the Raft goroutines on the commit's path waited up to twice as
// long for a CPU as in a bare Raft cluster (issue 19, docs/performance.md). Nothing these duties do is measured in
// milliseconds: a lost node is declared in seconds, a deletion or a drain
// waits on workers. The placer has its own, shorter spacing.
const dutyGap = 20 * time.Millisecond

// waitPaced is waitChange for a background duty whose pass began at began:
// it also returns no sooner than dutyGap after that start.
func waitPaced(ctx context.Context, watch <-chan struct{}, d time.Duration, began time.Time) bool {
	return waitChange(ctx, watch, d) && waitChange(ctx, nil, dutyGap-time.Since(began))
}

// applyLogged applies one leader command and logs what went wrong; leader
// duties retry from replicated state, so a failure needs no other handling.
func (l *Leader) applyLogged(ctx context.Context, typ fsm.MessageType, body any) *fsm.Result {
	res, err := l.store.Apply(ctx, typ, body)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			l.log.Warn("leader command failed", "type", typ, "err", err)
		}
		return nil
	case res.Err != nil:
		l.log.Debug("leader command rejected", "type", typ, "err", res.Err)
	}
	return res
}
