package leader

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/amserver/amserver/fsm"
)

// scaleDown gives back, per pool, the provisioned nodes idle for longer than
// idleTimeout beyond the warm pool, longest idle first, never going below
// minNodes. used are nodes the demand simulation would fill. Nodes already
// being given back still count in CountPool (against maxNodes) but not
// toward the floor: counted, every pass gave back one more node down to
// none.
func (e *elastic) scaleDown(ctx context.Context, st *fsm.State, pools map[string]*fsm.Pool, used map[string]bool, now int64) {
	for _, name := range sortedPoolNames(pools) {
		p := pools[name]
		idle := idleSpawns(st, name, used)
		excess := len(idle) + unusedSpawning(st, name, used) - p.Warm
		excess = min(excess, st.CountPool(name).Total()-givingBack(st, name)-p.MinNodes)
		timeout := p.IdleTimeoutOrDefault()
		for _, sp := range idle {
			if excess <= 0 {
				break
			}
			if now-sp.IdleSince < timeout {
				continue
			}
			reason := fmt.Sprintf("idle for %s beyond the warm pool of %d", time.Duration(now-sp.IdleSince).Round(time.Second), p.Warm)
			e.giveUp(ctx, sp, reason, now)
			excess--
		}
	}
}

// givingBack counts the pool's spawns being given back; CountPool counts
// each of them once, as its node or as spawning.
func givingBack(st *fsm.State, pool string) int {
	c := 0
	for _, sp := range st.Spawns(pool) {
		if sp.State == fsm.SpawnDeleting {
			c++
		}
	}
	return c
}

// idleSpawns are the pool's registered spawns whose node is placeable and
// idle, longest idle first.
func idleSpawns(st *fsm.State, pool string, used map[string]bool) []*fsm.Spawn {
	var out []*fsm.Spawn
	for _, sp := range st.Spawns(pool) {
		n := st.Node(sp.NodeID)
		if sp.State == fsm.SpawnRegistered && sp.IdleSince != 0 && n != nil && n.Placeable() && !used[n.ID] && st.NodeIdle(n.ID) {
			out = append(out, sp)
		}
	}
	slices.SortFunc(out, func(a, b *fsm.Spawn) int {
		return cmp.Or(cmp.Compare(a.IdleSince, b.IdleSince), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// unusedSpawning counts the pool's nodes still coming that no demand needs:
// they will be idle, so they count toward the warm pool.
func unusedSpawning(st *fsm.State, pool string, used map[string]bool) int {
	c := 0
	for _, n := range pendingNodes(st, st.Spawns(pool)) {
		if !used[n.ID] {
			c++
		}
	}
	return c
}

// dispatch starts the provisioner calls the replicated spawns ask for:
// create for spawning ones, delete for ones being given back once nothing
// is on their node, and forgets a spawn once its node is gone.
func (e *elastic) dispatch(ctx context.Context, st *fsm.State, pools map[string]*fsm.Pool, spawns []*fsm.Spawn, now int64) {
	join, servers := e.cfg.Addresses()
	for _, sp := range spawns {
		p := pools[sp.Pool]
		if p == nil || fsm.ProvisionerProblem(p.Provisioner, e.cfg.AllowExec) != "" {
			continue // not elastic any more, or nothing this server may call
		}
		switch sp.State {
		case fsm.SpawnSpawning:
			e.calls.Create(sp, p.Provisioner, join, servers, e.still(sp.ID, fsm.SpawnSpawning))
		case fsm.SpawnDeleting:
			e.deprovision(ctx, st, sp, p.Provisioner, now)
		}
	}
}

func (e *elastic) deprovision(ctx context.Context, st *fsm.State, sp *fsm.Spawn, prov *fsm.Provisioner, now int64) {
	n := st.Node(sp.NodeID)
	if n != nil && !st.NodeIdle(n.ID) {
		return // the drain is still moving work off it
	}
	at, ok := e.calls.Deleted(sp.ID)
	if !ok {
		e.calls.Delete(sp, prov, e.still(sp.ID, fsm.SpawnDeleting))
		return
	}
	// Forget the node once it is gone from gossip: removed while its worker
	// still runs, the worker would register it again.
	gone := n == nil || n.Status == fsm.NodeLeft || n.Status == fsm.NodeDown || n.Status == fsm.NodeUnknown
	if !gone && e.l.clock.Now().Sub(at) < e.cfg.DeleteGrace {
		return
	}
	e.apply(ctx, fsm.DeleteSpawnType, &fsm.DeleteSpawnRequest{ID: sp.ID, Reason: sp.DeleteReason, Now: now})
}

// still reports whether a spawn is still in the given state: a call for a
// spawn that moved on stops retrying.
func (e *elastic) still(id, state string) func() bool {
	return func() bool {
		sp := e.l.store.State().Spawn(id)
		return sp != nil && sp.State == state && e.l.store.IsLeader()
	}
}
