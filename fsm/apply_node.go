package fsm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amserver/amserver/ledger"
)

func (f *FSM) applyRegisterNode(t *tx, req *RegisterNodeRequest) (any, error) {
	t.advance(req.Now)
	n := req.Node
	if n.UtilizationCap == 0 {
		n.UtilizationCap = 1000
	}
	t.addSpawnProfile(&n)
	if err := ValidateNode(&n); err != nil {
		return nil, err
	}
	old := t.State.Node(n.ID)
	if old == nil {
		n.Status, n.Cordoned, n.Draining, n.StatusTime = NodeUnknown, false, false, t.now
		n.Usage, n.Provided, n.CreateIndex = ledger.Usage{}, nil, t.index
		t.spawnRegistered(&n)
		t.ensurePool(n.Pool)
		t.putNode(&n)
		t.event("nodeStatus", "", n.ID, "node %s registered in pool %s", n.ID, n.Pool)
		return nil, nil
	}
	if old.Pool != n.Pool && old.Usage.Reservations > 0 {
		return nil, fmt.Errorf("%w: node %s holds %d reservations; drain it before moving it to pool %s",
			ErrInUse, n.ID, old.Usage.Reservations, n.Pool)
	}
	n.Status, n.Cordoned, n.Draining, n.StatusTime = old.Status, old.Cordoned, old.Draining, old.StatusTime
	n.Usage, n.Provided, n.CreateIndex = old.Usage, old.Provided, old.CreateIndex
	n.Labels = keepGossipLabels(n.Labels, old.Labels)
	if err := ledger.Fits(n.Inventory(), n.Usage); err != nil {
		return nil, fmt.Errorf("%w: new inventory of node %s is below what is reserved: %w", ErrConflict, n.ID, err)
	}
	t.ensurePool(n.Pool)
	t.putNode(&n)
	return nil, nil
}

// addSpawnProfile adds the labels and taints of the instance type a node
// was provisioned as (its spawn's copy). The planner provisioned it for
// bundles that need those labels or tolerate those taints; a worker the
// provisioner started without them still registers a node that fits them,
// and a gated type's node stays gated. The type's label wins a key both set.
func (t *tx) addSpawnProfile(n *Node) {
	sp := t.State.SpawnByNode(n.ID)
	if sp == nil || sp.Pool != n.Pool {
		return
	}
	it := &sp.InstanceType
	if len(it.Labels) > 0 {
		labels := make(map[string]string, len(n.Labels)+len(it.Labels))
		maps.Copy(labels, n.Labels)
		maps.Copy(labels, it.Labels)
		n.Labels = labels
	}
	for _, taint := range it.Taints {
		if !slices.Contains(n.Taints, taint) {
			n.Taints = append(slices.Clip(n.Taints), taint)
		}
	}
}

// keepGossipLabels keeps the failure-domain labels gossip reported when a
// registration does not state them.
func keepGossipLabels(labels, old map[string]string) map[string]string {
	out := maps.Clone(labels)
	for _, k := range []string{"az", "cloud"} {
		if _, ok := out[k]; !ok && old[k] != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = old[k]
		}
	}
	return out
}

// ensurePool creates a cluster pool with defaults for a node registering into
// a pool nobody configured (DESIGN §2.1).
func (t *tx) ensurePool(name string) {
	if t.State.Pool(name) != nil {
		return
	}
	p := &Pool{Name: name, CreateIndex: t.index}
	NormalizePool(p)
	t.putPool(p)
}

func (f *FSM) applyDeregisterNode(t *tx, req *DeregisterNodeRequest) (any, error) {
	t.advance(req.Now)
	n := t.State.Node(req.NodeID)
	if n == nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, ErrNotFound)
	}
	held := t.NodeReservations(n.ID)
	if len(held) > 0 && !req.Force {
		return nil, fmt.Errorf("%w: node %s holds %d reservations; drain it or deregister with force",
			ErrInUse, n.ID, len(held))
	}
	for _, r := range held {
		t.unplace(r.Key, "node "+n.ID+" deregistered")
	}
	for _, a := range t.NodeAssignments(n.ID) {
		t.delete(tableAssignments, a)
	}
	t.delete(tableNodes, n)
	t.event("nodeStatus", "", n.ID, "node %s deregistered", n.ID)
	return nil, nil
}

// unplace releases a reservation and clears the job's placement in its bundle
// (or its service assignment), leaving the leader to repair it.
func (t *tx) unplace(k ledger.Key, why string) {
	r, ok := t.State.Reservation(k)
	if !ok {
		return
	}
	ledger.Release(t.ledgerStore(), k)
	t.stopAssignment(assignmentID(k, r.Node))
	if b := t.State.Bundle(k.Bundle); b != nil {
		cp := cloneBundle(b)
		if j := cp.slotJob(k.Replica, k.Job); j != nil && j.NodeID == r.Node {
			*j = JobPlacement{Name: j.Name}
		}
		t.putBundle(cp)
		t.event("nodeStatus", cp.ID(), r.Node, "job %s of replica %d lost its reservation: %s", k.Job, k.Replica, why)
	}
}

var validNodeStatus = map[string]bool{NodeReady: true, NodeSuspect: true, NodeDown: true, NodeLeft: true}

func (f *FSM) applyNodeStatus(t *tx, req *NodeStatusRequest) (any, error) {
	t.advance(req.Now)
	if !validNodeStatus[req.Status] {
		return nil, fmt.Errorf("%w: node status %q", ErrInvalid, req.Status)
	}
	n := t.State.Node(req.NodeID)
	if n == nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, ErrNotFound)
	}
	cp := *n
	cp.Labels = maps.Clone(n.Labels)
	setLabel(&cp, "az", req.AZ)
	setLabel(&cp, "cloud", req.Cloud)
	statusChanged := cp.Status != req.Status
	if !statusChanged && maps.Equal(cp.Labels, n.Labels) {
		return nil, nil
	}
	if statusChanged {
		cp.Status, cp.StatusTime = req.Status, t.now
	}
	t.putNode(&cp)
	if statusChanged {
		t.event("nodeStatus", "", n.ID, "node %s is %s (was %s)", n.ID, req.Status, n.Status)
	}
	if req.Status == NodeDown || req.Status == NodeLeft {
		for _, id := range sortedKeys(cp.Provided) {
			t.withdrawProvided(n.ID, id)
		}
	}
	return nil, nil
}

func setLabel(n *Node, key, value string) {
	if value == "" {
		return
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
}

func (f *FSM) applyCordon(t *tx, req *NodeFlagRequest) (any, error) {
	return t.setNodeFlag(req, func(n *Node) { n.Cordoned = req.On; n.Draining = n.Draining && req.On }, "cordoned")
}

func (f *FSM) applyDrain(t *tx, req *NodeFlagRequest) (any, error) {
	return t.setNodeFlag(req, func(n *Node) { n.Draining = req.On }, "draining")
}

func (t *tx) setNodeFlag(req *NodeFlagRequest, set func(*Node), what string) (any, error) {
	t.advance(req.Now)
	n := t.State.Node(req.NodeID)
	if n == nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, ErrNotFound)
	}
	cp := *n
	set(&cp)
	if cp.Cordoned == n.Cordoned && cp.Draining == n.Draining {
		return nil, nil
	}
	t.putNode(&cp)
	t.event("nodeStatus", "", n.ID, "node %s %s: %t", n.ID, what, req.On)
	return nil, nil
}

// withdrawProvided removes the capabilities a node service provided and, so
// the ledger's invariants hold at this index, releases the reservations that
// no longer fit in key order.
func (t *tx) withdrawProvided(nodeID, serviceID string) {
	n := t.State.Node(nodeID)
	if n == nil || n.Provided[serviceID] == nil {
		return
	}
	cp := *n
	cp.Provided = maps.Clone(n.Provided)
	delete(cp.Provided, serviceID)
	t.putNode(&cp)
	t.releaseUnfit(nodeID, "capability provided by service "+serviceID+" withdrawn")
}

// releaseUnfit releases reservations holding capabilities on a node until
// what the node holds fits its inventory again (it shows fewer
// capabilities than before).
func (t *tx) releaseUnfit(nodeID, why string) {
	for _, r := range t.NodeReservations(nodeID) {
		cur := t.State.Node(nodeID)
		if ledger.Fits(cur.Inventory(), cur.Usage) == nil {
			return
		}
		if len(r.Grant.Capabilities) > 0 {
			t.unplace(r.Key, why)
		}
	}
}

// recordableEvents are the event types a RecordEvent command may carry.
var recordableEvents = map[string]bool{"serverJoined": true, "serverRemoved": true}

func (f *FSM) applyRecordEvent(t *tx, req *RecordEventRequest) (any, error) {
	t.advance(req.Now)
	if !recordableEvents[req.Type] {
		return nil, fmt.Errorf("%w: event type %q cannot be recorded directly", ErrInvalid, req.Type)
	}
	if len(req.Message) > 1024 || len(req.NodeID) > 128 {
		return nil, fmt.Errorf("%w: event too long", ErrInvalid)
	}
	t.event(req.Type, "", req.NodeID, "%s", req.Message)
	return nil, nil
}
