package fsm

import (
	"fmt"
	"slices"
)

// UpsertSpawnRequest creates a spawn (the leader is about to ask the
// provisioner for a node) or updates one: its idle time, or the move to
// deleting. MaxProvisioned is the leader's cluster-wide cap on provisioned
// nodes (0 = none); the FSM enforces it, and the pool's maxNodes, on create,
// so two overlapping leaders can never exceed either.
type UpsertSpawnRequest struct {
	Spawn          Spawn
	MaxProvisioned int
	Now            int64
}

// DeleteSpawnRequest forgets a spawn whose node the provisioner gave back,
// and removes the node if it is still registered (it must hold nothing).
type DeleteSpawnRequest struct {
	ID     string
	Reason string
	Now    int64
}

// SpawnBlockedRequest records on unplaceable bundles why their elastic pool
// cannot provision a node for them: a cap, or no provisioner. The stage and
// detail become the explanation's nearest miss (DESIGN §3.7).
type SpawnBlockedRequest struct {
	Bundles []string
	Stage   string
	Detail  string
	Now     int64
}

// Event types of elastic pools.
const (
	EventNodeProvisioning   = "nodeProvisioning"
	EventProvisionTimedOut  = "provisionTimedOut"
	EventNodeDeprovisioning = "nodeDeprovisioning"
	EventNodeDeprovisioned  = "nodeDeprovisioned"
)

func (f *FSM) applyUpsertSpawn(t *tx, req *UpsertSpawnRequest) (any, error) {
	t.advance(req.Now)
	old := t.State.Spawn(req.Spawn.ID)
	if old == nil {
		return nil, t.createSpawn(req)
	}
	return nil, t.updateSpawn(old, &req.Spawn)
}

func (t *tx) createSpawn(req *UpsertSpawnRequest) error {
	sp := req.Spawn
	p := t.State.Pool(sp.Pool)
	switch {
	case !validName(sp.ID) || !validName(sp.NodeID):
		return invalidf("spawn id %q and node id %q must match %s", sp.ID, sp.NodeID, namePattern)
	case p == nil:
		return fmt.Errorf("pool %s: %w", sp.Pool, ErrNotFound)
	case p.Kind != PoolElastic:
		return invalidf("pool %s is not elastic", sp.Pool)
	case p.InstanceTypeNamed(sp.InstanceType.Name) == nil:
		return invalidf("pool %s has no instance type %q", sp.Pool, sp.InstanceType.Name)
	case t.State.Node(sp.NodeID) != nil || t.State.SpawnByNode(sp.NodeID) != nil:
		return fmt.Errorf("%w: node %s already exists", ErrExists, sp.NodeID)
	case !oneOf(sp.Reason, SpawnForDemand, SpawnForWarm, SpawnForMinNodes):
		return invalidf("spawn reason %q", sp.Reason)
	}
	if c := t.State.CountPool(sp.Pool); p.MaxNodes > 0 && c.Total() >= p.MaxNodes {
		return fmt.Errorf("%w: %s", ErrConflict, PoolCapDetail(sp.Pool, p.MaxNodes, c))
	}
	if c := t.State.CountProvisioned(); req.MaxProvisioned > 0 && c.Total() >= req.MaxProvisioned {
		return fmt.Errorf("%w: %s", ErrConflict, GlobalCapDetail(req.MaxProvisioned, c))
	}
	sp.InstanceType = *p.InstanceTypeNamed(sp.InstanceType.Name)
	sp.State, sp.CreateTime, sp.CreateIndex = SpawnSpawning, t.now, t.index
	sp.RegisterTime, sp.IdleSince, sp.DeleteTime, sp.DeleteReason = 0, 0, 0, ""
	sp.Demand = slices.Clone(sp.Demand)
	t.putSpawn(&sp)
	t.event(EventNodeProvisioning, "", sp.NodeID, "provisioning node %s (instance type %s) in pool %s for %s%s",
		sp.NodeID, sp.InstanceType.Name, sp.Pool, sp.Reason, demandSuffix(sp.Demand))
	return nil
}

func demandSuffix(demand []string) string {
	if len(demand) == 0 {
		return ""
	}
	return fmt.Sprintf(" of %v", demand)
}

// updateSpawn applies the mutable fields of want: the idle time of a
// registered node, and the one-way move to deleting.
func (t *tx) updateSpawn(old, want *Spawn) error {
	if want.NodeID != old.NodeID || want.Pool != old.Pool {
		return fmt.Errorf("%w: spawn %s is node %s of pool %s", ErrConflict, old.ID, old.NodeID, old.Pool)
	}
	if want.State == "" {
		return nil // a create retried after an unknown outcome: it happened
	}
	cp := *old
	switch {
	case want.State == SpawnDeleting && old.State != SpawnDeleting:
		if err := t.checkDeleteReason(old, want); err != nil {
			return err
		}
		cp.State, cp.DeleteTime, cp.DeleteReason, cp.IdleSince = SpawnDeleting, t.now, want.DeleteReason, 0
	case want.State != old.State:
		return invalidf("spawn %s cannot move from %s to %s", old.ID, old.State, want.State)
	case old.State == SpawnRegistered:
		cp.IdleSince = want.IdleSince
	}
	if cp.State == old.State && cp.IdleSince == old.IdleSince {
		return nil
	}
	t.putSpawn(&cp)
	if cp.State == SpawnDeleting && old.State != SpawnDeleting {
		t.startDeprovision(old, &cp)
	}
	return nil
}

// checkDeleteReason refuses a timeout the command's clock does not support:
// a stale or early command changes nothing.
func (t *tx) checkDeleteReason(old, want *Spawn) error {
	if old.State != SpawnSpawning || want.DeleteReason != SpawnTimeoutReason {
		return nil
	}
	if p := t.State.Pool(old.Pool); p != nil && t.now < old.CreateTime+p.SpawnTimeoutOrDefault() {
		return fmt.Errorf("%w: spawn %s has not timed out yet", ErrConflict, old.ID)
	}
	return nil
}

// SpawnTimeoutReason is the delete reason of a spawn whose node never
// registered within the pool's spawnTimeout.
const SpawnTimeoutReason = "spawnTimeout"

// startDeprovision cordons and drains a registered node being given back,
// in the same command, so nothing new lands on it.
func (t *tx) startDeprovision(old, sp *Spawn) {
	if old.State == SpawnSpawning && sp.DeleteReason == SpawnTimeoutReason {
		t.event(EventProvisionTimedOut, "", sp.NodeID,
			"node %s (request %s) did not register within the spawn timeout; giving it back and retrying its demand%s",
			sp.NodeID, sp.ID, demandSuffix(sp.Demand))
	} else {
		t.event(EventNodeDeprovisioning, "", sp.NodeID, "deprovisioning node %s of pool %s: %s", sp.NodeID, sp.Pool, sp.DeleteReason)
	}
	if n := t.State.Node(sp.NodeID); n != nil && (!n.Cordoned || !n.Draining) {
		cp := *n
		cp.Cordoned, cp.Draining = true, true
		t.putNode(&cp)
	}
}

func (f *FSM) applyDeleteSpawn(t *tx, req *DeleteSpawnRequest) (any, error) {
	t.advance(req.Now)
	sp := t.State.Spawn(req.ID)
	if sp == nil {
		return nil, fmt.Errorf("spawn %s: %w", req.ID, ErrNotFound)
	}
	if sp.State != SpawnDeleting {
		return nil, fmt.Errorf("%w: spawn %s is %s, not deleting", ErrConflict, sp.ID, sp.State)
	}
	if n := t.State.Node(sp.NodeID); n != nil {
		if _, err := f.applyDeregisterNode(t, &DeregisterNodeRequest{NodeID: n.ID, Now: req.Now}); err != nil {
			return nil, err
		}
	}
	t.delete(tableSpawns, sp)
	t.event(EventNodeDeprovisioned, "", sp.NodeID, "node %s of pool %s deprovisioned (request %s): %s",
		sp.NodeID, sp.Pool, sp.ID, req.Reason)
	return nil, nil
}

// spawnRegistered links a registering node to its spawn: a spawning record
// becomes registered; a node arriving after its spawn was given up is
// cordoned so nothing lands on it before the provisioner removes it.
func (t *tx) spawnRegistered(n *Node) {
	sp := t.State.SpawnByNode(n.ID)
	if sp == nil {
		return
	}
	if sp.State == SpawnDeleting {
		n.Cordoned, n.Draining = true, true
		return
	}
	if sp.State != SpawnSpawning {
		return
	}
	cp := *sp
	cp.State, cp.RegisterTime = SpawnRegistered, t.now
	t.putSpawn(&cp)
}

func (f *FSM) applySpawnBlocked(t *tx, req *SpawnBlockedRequest) (any, error) {
	t.advance(req.Now)
	if len(req.Detail) > 1024 || len(req.Stage) > 64 {
		return nil, invalidf("spawn blocked: stage or detail too long")
	}
	miss := &NearestMiss{Stage: req.Stage, Detail: req.Detail}
	for _, id := range req.Bundles {
		b := t.State.Bundle(id)
		if b == nil || b.State != StateUnplaceable || b.Explain == nil {
			continue // placed, deleted or not yet tried since: nothing to explain
		}
		if m := b.Explain.NearestMiss; m != nil && *m == *miss {
			continue
		}
		cp := cloneBundle(b)
		ex := *b.Explain
		ex.NearestMiss = miss
		cp.Explain = &ex
		t.putBundle(cp)
	}
	return nil, nil
}

func (t *tx) putSpawn(sp *Spawn) {
	sp.ModifyIndex = t.index
	t.insert(tableSpawns, sp)
}
