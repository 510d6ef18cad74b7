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
		if p == nil || e.cfg.ProvisionerProblem(p.Provisioner) != "" {
			continue // not elastic any more, or nothing this server may call
		}
		switch sp.State {
		case fsm.SpawnSpawning:
			if why, failed := e.calls.Failed(opCreate, sp.ID); failed {
				e.rest(sp.Pool, why, time.Unix(0, now))
				e.giveUp(ctx, sp, "the provisioner's create call failed after its retries: "+why, now)
				continue
			}
			e.calls.Create(sp, p.Provisioner, join, servers, e.still(sp.ID, fsm.SpawnSpawning))
		case fsm.SpawnDeleting:
			if why, failed := e.calls.Failed(opDelete, sp.ID); failed {
				e.apply(ctx, fsm.DeleteSpawnType, &fsm.DeleteSpawnRequest{ID: sp.ID, Now: now,
					Reason: "the provisioner's delete call failed after its retries (" + why + "); the node may still exist at the provider"})
				continue
			}
			e.deprovision(ctx, st, sp, p.Provisioner, now)
		}
	}
}

func (e *elastic) deprovision(ctx context.Context, st *fsm.State, sp *fsm.Spawn, prov *fsm.Provisioner, now int64) {
	n := st.Node(sp.NodeID)
	if n != nil && !drained(st, n) {
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

// drained: nothing of any bundle is on the node, or it is lost (down or
// left) and all it still has are stops its worker will never acknowledge:
// their work was released, and waiting for them kept a dead node's spawn
// (and its maxNodes slot) for good.
func drained(st *fsm.State, n *fsm.Node) bool {
	if st.NodeIdle(n.ID) {
		return true
	}
	if !lost(n) || len(st.NodeReservations(n.ID)) > 0 {
		return false
	}
	for _, a := range st.NodeAssignments(n.ID) {
		if a.BundleID != "" && a.Desired != fsm.DesiredStop {
			return false
		}
	}
	return true
}

// still reports whether a spawn is still in the given state: a call for a
// spawn that moved on stops retrying.
func (e *elastic) still(id, state string) func() bool {
	return func() bool {
		sp := e.l.store.State().Spawn(id)
		return sp != nil && sp.State == state && e.l.store.IsLeader()
	}
}

// The operations Provisioning.Failed names.
const (
	opCreate = "create"
	opDelete = "delete"
)

// provisionerRest is how long a pool whose provisioner calls were given up
// provisions nothing new, so a broken provisioner is not called in an
// endless loop of fresh spawns.
const provisionerRest = time.Minute

// rest stops new provisioning in pool until provisionerRest has passed.
func (e *elastic) rest(pool, why string, now time.Time) {
	e.failing[pool] = poolFailure{why: why, until: now.Add(provisionerRest)}
	e.planned = nil // plan again, with the pool's reason
}

// endRests lets rested pools provision again; planning must then look at
// them although no state changed.
func (e *elastic) endRests(now time.Time) {
	for pool, f := range e.failing {
		if !now.Before(f.until) {
			delete(e.failing, pool)
			e.planned = nil
		}
	}
}

// poolProblem says why a pool cannot provision now ("" when it can): the
// operator's policy, or a provisioner that is resting after failing.
func (e *elastic) poolProblem(p *fsm.Pool) string {
	if why := e.cfg.ProvisionerProblem(p.Provisioner); why != "" {
		return why
	}
	if f, ok := e.failing[p.Name]; ok {
		return fmt.Sprintf("has a provisioner whose calls keep failing (%s); it is tried again at %s",
			f.why, f.until.UTC().Format(time.RFC3339))
	}
	return ""
}
