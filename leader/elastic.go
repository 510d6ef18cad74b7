package leader

import (
	"context"
	"errors"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/scheduler"
)

// ElasticConfig tunes elastic pools' planning (DESIGN §2.2).
type ElasticConfig struct {
	// MaxProvisionedNodes caps provisioned nodes across every elastic pool,
	// spawning ones included; 0 means no cap.
	MaxProvisionedNodes int
	// ProvisionerProblem says why this server cannot call a pool's
	// provisioner ("" when it can): the operator's policy (package
	// elastic). Nil allows no provisioner at all.
	ProvisionerProblem func(*fsm.Provisioner) string
	// Interval is how often the leader looks at elastic pools without a
	// state change, for timeouts (default 1 s).
	Interval time.Duration
	// DeleteGrace is how long after a successful delete call the leader
	// waits for the node to leave gossip before forgetting it anyway
	// (default 30 s).
	DeleteGrace time.Duration
	// Provisioning starts a term's provisioner calls (package elastic);
	// nil provisions nothing, while planning still runs.
	Provisioning func(ctx context.Context) Provisioning
	// Addresses are the servers' gossip addresses (for a new worker's
	// --join) and HTTP addresses (for its --servers).
	Addresses func() (join, servers []string)
}

func (c *ElasticConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.DeleteGrace <= 0 {
		c.DeleteGrace = 30 * time.Second
	}
	if c.Provisioning == nil {
		c.Provisioning = func(context.Context) Provisioning { return noProvisioning{} }
	}
	if c.Addresses == nil {
		c.Addresses = func() ([]string, []string) { return nil, nil }
	}
	if c.ProvisionerProblem == nil {
		c.ProvisionerProblem = func(*fsm.Provisioner) string { return "has a provisioner these servers may not call" }
	}
}

// Provisioning carries out provisioner calls for the replicated spawns,
// asynchronously and retried; every call is idempotent by spawn id.
type Provisioning interface {
	// Create asks sp's pool provisioner p for sp's node; wanted is asked
	// before every attempt, and a call whose spawn moved on stops.
	Create(sp *fsm.Spawn, p *fsm.Provisioner, join, servers []string, wanted func() bool)
	// Delete gives sp's node back.
	Delete(sp *fsm.Spawn, p *fsm.Provisioner, wanted func() bool)
	// Deleted returns when sp's delete call succeeded in this term.
	Deleted(id string) (time.Time, bool)
	// Failed returns why spawn id's "create" or "delete" call was given
	// up after its retries, if it was.
	Failed(op, id string) (string, bool)
	// Forget drops what is known of calls for spawns keep refuses.
	Forget(keep func(id string) bool)
	// Kick receives a value when a call succeeded.
	Kick() <-chan struct{}
	// Wait waits for the term's calls to end.
	Wait()
}

// noProvisioning makes no calls.
type noProvisioning struct{}

func (noProvisioning) Create(*fsm.Spawn, *fsm.Provisioner, []string, []string, func() bool) {}
func (noProvisioning) Delete(*fsm.Spawn, *fsm.Provisioner, func() bool)                     {}
func (noProvisioning) Deleted(string) (time.Time, bool)                                     { return time.Time{}, false }
func (noProvisioning) Failed(string, string) (string, bool)                                 { return "", false }
func (noProvisioning) Forget(func(string) bool)                                             {}
func (noProvisioning) Kick() <-chan struct{}                                                { return nil }
func (noProvisioning) Wait()                                                                {}

// elasticMinGap spaces passes under a stream of unrelated state changes.
const elasticMinGap = 100 * time.Millisecond

// elastic is the leader duty of elastic pools: it provisions nodes for
// bundles that do not fit, keeps warm pools and minNodes floors, gives back
// nodes idle beyond the warm pool, and prunes spawns that never registered.
// Every decision is first written to Raft as a spawn; provisioner calls
// follow the replicated spawns, asynchronously (Provisioning).
type elastic struct {
	l      *Leader
	cfg    ElasticConfig
	engine *scheduler.Engine
	calls  Provisioning
	// planned caches the last plan's used nodes at the state index it saw.
	planned   map[string]bool
	plannedAt uint64
	// fence is a log index to see applied before deciding again, after a
	// command whose outcome is unknown.
	fence uint64
	// failing holds pools whose provisioner calls were given up, and until
	// when the pool provisions nothing new: leader-local, a new leader
	// simply tries once more.
	failing map[string]poolFailure
	// warnedShort holds the spawns whose short node was logged this term.
	warnedShort map[string]bool
}

// poolFailure is a pool's provisioner that failed, and until when it rests.
type poolFailure struct {
	why   string
	until time.Time
}

func (e *elastic) Name() string { return "elastic" }

func (e *elastic) Run(ctx context.Context) {
	e.begin(ctx)
	defer e.calls.Wait()
	tick := time.NewTicker(e.cfg.Interval)
	defer tick.Stop()
	for {
		watch := e.l.store.WatchCh()
		e.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-watch:
		case <-tick.C:
		case <-e.calls.Kick():
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(elasticMinGap):
		}
	}
}

// begin starts a term: nothing planned, no fence, this term's calls.
func (e *elastic) begin(ctx context.Context) {
	e.cfg = e.l.cfg.Elastic
	e.engine = scheduler.NewEngine(scheduler.Options{})
	e.planned, e.plannedAt, e.fence = nil, 0, 0
	e.failing = map[string]poolFailure{}
	e.warnedShort = nil
	e.calls = e.cfg.Provisioning(ctx)
}

// pass does one round of every elastic decision against one state view.
func (e *elastic) pass(ctx context.Context) {
	st := e.l.store.State()
	pools := elasticPools(st)
	spawns := st.Spawns("")
	if len(pools) == 0 && len(spawns) == 0 {
		return
	}
	if e.l.store.AppliedIndex() < e.fence {
		return // a command of ours may still commit: plan on the state that has it
	}
	now := e.l.clock.Now().UnixNano()
	e.calls.Forget(func(id string) bool { return st.Spawn(id) != nil })
	e.endRests(time.Unix(0, now))
	e.warnShort(st, spawns)
	if e.expire(ctx, st, spawns, now) || e.trackIdle(ctx, st, spawns, now) {
		return // the state moved: plan against the new one
	}
	e.scaleDown(ctx, st, pools, e.plan(ctx, st, pools, now), now)
	e.dispatch(ctx, st, pools, spawns, now)
}

// planTables are what demand planning reads: it runs again only when one
// of them changed, since a plan simulates every unplaceable bundle.
var planTables = []string{"nodes", "pools", "bundles", "assignments", "spawns", "services"}

// plan provisions for demand, warm pools and floors, and explains what it
// cannot provision; it returns the nodes the simulated placements use.
func (e *elastic) plan(ctx context.Context, st *fsm.State, pools map[string]*fsm.Pool, now int64) map[string]bool {
	idx := st.Index(planTables...)
	if e.planned != nil && idx == e.plannedAt {
		return e.planned
	}
	plan := newPlanner(st, e.engine, pools, e.cfg.MaxProvisionedNodes, e.poolProblem).run()
	settled := true
	for _, sp := range plan.spawns {
		// The pool may be deleted, or stop being elastic, while the pass
		// writes its spawns: stop asking for it (the FSM would refuse).
		if ctx.Err() != nil || !isElastic(e.l.store.State().Pool(sp.Pool)) {
			settled = false
			continue
		}
		res := e.apply(ctx, fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{
			Spawn: *sp, MaxProvisioned: e.cfg.MaxProvisionedNodes, Now: now,
		})
		settled = settled && res != nil
	}
	settled = e.explainBlocked(ctx, st, plan.blocked, now) && settled
	e.planned, e.plannedAt = nil, 0
	if settled { // an outcome unknown is planned again even if nothing changed
		e.planned, e.plannedAt = plan.used, idx
	}
	return plan.used
}

// apply applies one command like applyLogged, and when its outcome is
// unknown fences planning until the entry's fate is known: planning again
// while a spawn may still commit could provision its demand twice.
func (e *elastic) apply(ctx context.Context, typ fsm.MessageType, body any) *fsm.Result {
	res, err := e.l.store.Apply(ctx, typ, body)
	switch {
	case errors.Is(err, raftstore.ErrOutcomeUnknown):
		e.fence = e.l.store.LastIndex()
		e.l.log.Warn("elastic command outcome unknown; waiting for the log before planning again", "type", typ, "err", err)
		return nil
	case err != nil:
		if ctx.Err() == nil {
			e.l.log.Warn("elastic command failed", "type", typ, "err", err)
		}
		return nil
	case res.Err != nil:
		e.l.log.Debug("elastic command rejected", "type", typ, "err", res.Err)
	}
	return res
}

func isElastic(p *fsm.Pool) bool { return p != nil && p.Kind == fsm.PoolElastic }

// elasticPools are the pools of kind elastic, by name.
func elasticPools(st *fsm.State) map[string]*fsm.Pool {
	out := map[string]*fsm.Pool{}
	for _, p := range st.Pools() {
		if p.Kind == fsm.PoolElastic {
			out[p.Name] = p
		}
	}
	return out
}

// giveUp moves a spawn to deleting: its node is cordoned and drained, then
// given back through the provisioner.
func (e *elastic) giveUp(ctx context.Context, sp *fsm.Spawn, reason string, now int64) {
	cp := *sp
	cp.State, cp.DeleteReason = fsm.SpawnDeleting, reason
	e.apply(ctx, fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Spawn: cp, Now: now})
}

// expire gives up spawns whose node did not register (or never became
// ready) within the pool's spawnTimeout, registered spawns whose node
// was deregistered, and those whose node has been down or left for the
// spawnTimeout. Their demand is planned again on the next pass.
func (e *elastic) expire(ctx context.Context, st *fsm.State, spawns []*fsm.Spawn, now int64) bool {
	acted := false
	for _, sp := range spawns {
		timeout := st.Pool(sp.Pool).SpawnTimeoutOrDefault()
		n := st.Node(sp.NodeID)
		switch {
		case sp.State == fsm.SpawnSpawning && n == nil && now >= sp.CreateTime+timeout:
			e.giveUp(ctx, sp, fsm.SpawnTimeoutReason, now)
		case sp.State == fsm.SpawnRegistered && n == nil:
			e.giveUp(ctx, sp, "its node was deregistered", now)
		case sp.State == fsm.SpawnRegistered && n.Pool != sp.Pool:
			// Its worker was started with the wrong --pool: the node would
			// count as spawning against maxNodes for good.
			e.giveUp(ctx, sp, "its node registered in pool "+n.Pool+", not "+sp.Pool, now)
		case sp.State == fsm.SpawnRegistered && n.Status == fsm.NodeUnknown && now >= sp.RegisterTime+timeout:
			e.giveUp(ctx, sp, "its node registered but never became ready", now)
		case sp.State == fsm.SpawnRegistered && lost(n) && now >= n.StatusTime+timeout:
			// Else it holds a maxNodes slot for good: a pool at its cap
			// could never replace a machine the provider lost.
			e.giveUp(ctx, sp, lostReason(n), now)
		default:
			continue
		}
		acted = true
	}
	return acted
}

// lost: a registered node that is gone from gossip, down or left.
func lost(n *fsm.Node) bool { return n.Status == fsm.NodeDown || n.Status == fsm.NodeLeft }

func lostReason(n *fsm.Node) string {
	if n.Status == fsm.NodeLeft {
		return "its node left and did not come back within the spawn timeout"
	}
	return "its node has been down for the spawn timeout"
}

// trackIdle records in each registered spawn when its node became idle, so
// the idle timeout survives a change of leader.
func (e *elastic) trackIdle(ctx context.Context, st *fsm.State, spawns []*fsm.Spawn, now int64) bool {
	acted := false
	for _, sp := range spawns {
		n := st.Node(sp.NodeID)
		if sp.State != fsm.SpawnRegistered || n == nil {
			continue
		}
		idle := n.Placeable() && st.NodeIdle(n.ID)
		if idle == (sp.IdleSince != 0) {
			continue
		}
		cp := *sp
		cp.IdleSince = 0
		if idle {
			cp.IdleSince = now
		}
		e.apply(ctx, fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Spawn: cp, Now: now})
		acted = true
	}
	return acted
}

// explainBlocked writes why bundles get no node, skipping bundles whose
// explanation already says so (each write is a Raft entry); false when a
// write's outcome is unknown.
func (e *elastic) explainBlocked(ctx context.Context, st *fsm.State, blocks map[blocked][]string, now int64) bool {
	ok := true
	for k, ids := range blocks {
		var stale []string
		for _, id := range ids {
			b := st.Bundle(id)
			if b == nil || b.State != fsm.StateUnplaceable || b.Explain == nil {
				continue
			}
			if m := b.Explain.NearestMiss; m == nil || m.Stage != k.stage || m.Detail != k.detail || m.NodeID != "" {
				stale = append(stale, id)
			}
		}
		if len(stale) > 0 {
			res := e.apply(ctx, fsm.SpawnBlockedType, &fsm.SpawnBlockedRequest{Bundles: stale, Stage: k.stage, Detail: k.detail, Now: now})
			ok = ok && res != nil
		}
	}
	return ok
}
