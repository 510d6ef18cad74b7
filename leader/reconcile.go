package leader

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// reconcileInterval re-checks membership even without gossip events, which
// dead-server cleanup needs (it acts on elapsed time).
const reconcileInterval = time.Second

// reconciler is the leader duty that turns what gossip observes into Raft
// membership changes and node status commands. Apply never reads gossip:
// the leader writes what it saw as ordinary commands.
type reconciler struct {
	l         *Leader
	nodeIndex uint64 // nodes-table index at the last node pass
}

func (r *reconciler) Name() string { return "reconcile" }

func (r *reconciler) Run(ctx context.Context) {
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	for {
		watch := r.l.store.WatchCh()
		r.servers(ctx)
		r.nodes(ctx, false)
		select {
		case <-ctx.Done():
			return
		case <-r.l.cfg.Wake:
			r.nodes(ctx, true)
		case <-tick.C:
			r.nodes(ctx, true)
		case <-watch:
		}
	}
}

// servers adds alive servers as voters, removes servers that left, and
// removes dead ones only after the cleanup delay and never below quorum.
func (r *reconciler) servers(ctx context.Context) {
	l := r.l
	if l.cfg.Membership == nil || l.cfg.Voters == nil || ctx.Err() != nil {
		return
	}
	current, err := l.cfg.Voters.Voters()
	if err != nil {
		return
	}
	voters := len(current)
	now := l.clock.Now()
	for _, m := range l.cfg.Membership.Members() {
		if m.Meta.Role != gossip.RoleServer || m.Name == l.cfg.NodeID {
			continue
		}
		addr, known := current[m.Name]
		switch {
		case m.Status == gossip.StatusAlive && (!known || addr != m.Meta.RaftAddr):
			l.addVoter(m)
		case known && m.Status == gossip.StatusLeft:
			if l.removeServer(m.Name, "left gracefully") {
				voters--
			}
		case known && m.Status == gossip.StatusDead && now.Sub(m.Since) >= l.cfg.DeadServerCleanup && voters-1 >= l.cfg.QuorumSize:
			if l.removeServer(m.Name, "dead for longer than the cleanup delay") {
				voters--
			}
		}
	}
}

func (l *Leader) addVoter(m gossip.Member) {
	if err := l.cfg.Voters.AddVoter(m.Name, m.Meta.RaftAddr); err != nil {
		if !errors.Is(err, raftstore.ErrProbeBackoff) {
			l.log.Warn("not adding server to raft", "peer", m.Name, "addr", m.Meta.RaftAddr, "err", err)
		}
		return
	}
	l.log.Info("server joined raft", "peer", m.Name, "addr", m.Meta.RaftAddr)
	l.recordEvent("serverJoined", m.Name, fmt.Sprintf("server %s joined raft at %s", m.Name, m.Meta.RaftAddr))
}

// recordEvent puts a membership change in the replicated event log.
func (l *Leader) recordEvent(typ, node, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.applyLogged(ctx, fsm.RecordEventType, &fsm.RecordEventRequest{Type: typ, NodeID: node, Message: msg, Now: l.clock.Now().UnixNano()})
}

func (l *Leader) removeServer(id, why string) bool {
	if err := l.cfg.Voters.RemoveServer(id); err != nil {
		l.log.Warn("removing server from raft failed", "peer", id, "err", err)
		return false
	}
	l.log.Info("server removed from raft", "peer", id, "reason", why)
	l.recordEvent("serverRemoved", id, fmt.Sprintf("server %s removed from raft: %s", id, why))
	return true
}

// gossipStatus maps a gossip member state to a node status (DESIGN §4).
var gossipStatus = map[gossip.Status]string{
	gossip.StatusAlive:   fsm.NodeReady,
	gossip.StatusSuspect: fsm.NodeSuspect,
	gossip.StatusDead:    fsm.NodeDown,
	gossip.StatusLeft:    fsm.NodeLeft,
}

// nodes writes status transitions and failure-domain labels of registered
// nodes. It only looks when gossip changed (force) or the node table did.
func (r *reconciler) nodes(ctx context.Context, force bool) {
	l := r.l
	if l.cfg.Membership == nil || ctx.Err() != nil {
		return
	}
	st := l.store.State()
	idx := st.Index("nodes")
	if !force && idx == r.nodeIndex {
		return
	}
	r.nodeIndex = idx
	var reqs []*fsm.NodeStatusRequest
	now := l.clock.Now().UnixNano()
	for _, n := range st.Nodes("") {
		m, ok := l.cfg.Membership.Member(n.ID)
		if !ok {
			continue // never seen in gossip: it stays unknown until it joins
		}
		want := gossipStatus[m.Status]
		labels := maps.Clone(n.Labels)
		setIfSet(&labels, "az", m.Meta.AZ)
		setIfSet(&labels, "cloud", m.Meta.Cloud)
		if want != n.Status || !maps.Equal(labels, n.Labels) {
			reqs = append(reqs, &fsm.NodeStatusRequest{NodeID: n.ID, Status: want, AZ: m.Meta.AZ, Cloud: m.Meta.Cloud, Now: now})
		}
	}
	applyAll(ctx, l, fsm.NodeStatusType, reqs)
}

func setIfSet(labels *map[string]string, k, v string) {
	if v == "" {
		return
	}
	if *labels == nil {
		*labels = map[string]string{}
	}
	(*labels)[k] = v
}

// applyAll applies independent commands concurrently so that a burst (a
// partition marking many nodes down) shares Raft batches.
func applyAll[T any](ctx context.Context, l *Leader, typ fsm.MessageType, reqs []*T) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, req := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func(req *T) {
			defer func() { <-sem; wg.Done() }()
			l.applyLogged(ctx, typ, req)
		}(req)
	}
	wg.Wait()
}
