package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// reconcileInterval re-checks membership even without gossip events, which
// dead-server cleanup needs (it acts on elapsed time).
const reconcileInterval = time.Second

// reconciler is the leader duty that turns what gossip observes into Raft
// membership changes and node status commands. Apply never reads gossip:
// the leader writes what it saw as ordinary commands.
type reconciler struct {
	s         *Server
	nodeIndex uint64 // nodes-table index at the last node pass
}

func (r *reconciler) Name() string { return "reconcile" }

func (r *reconciler) Run(ctx context.Context) {
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	for {
		watch := r.s.fsm.WatchCh()
		r.servers(ctx)
		r.nodes(ctx, false)
		select {
		case <-ctx.Done():
			return
		case <-r.s.reconcileCh:
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
	s := r.s
	if s.gossip == nil || ctx.Err() != nil {
		return
	}
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return
	}
	current := map[string]raft.Server{}
	for _, srv := range future.Configuration().Servers {
		current[string(srv.ID)] = srv
	}
	voters := len(current)
	for _, m := range s.gossip.Members() {
		if m.Meta.Role != gossip.RoleServer || m.Name == s.cfg.NodeID {
			continue
		}
		srv, known := current[m.Name]
		switch {
		case m.Status == gossip.StatusAlive && (!known || string(srv.Address) != m.Meta.RaftAddr):
			s.addVoter(m)
		case known && m.Status == gossip.StatusLeft:
			if s.removeServer(m.Name, "left gracefully") {
				voters--
			}
		case known && m.Status == gossip.StatusDead && time.Since(m.Since) >= s.cfg.DeadServerCleanup && voters-1 >= s.cfg.QuorumSize:
			if s.removeServer(m.Name, "dead for longer than the cleanup delay") {
				voters--
			}
		}
	}
}

func (s *Server) addVoter(m gossip.Member) {
	if err := s.probeVoter(m.Meta.RaftAddr); err != nil {
		if !errors.Is(err, errProbeBackoff) {
			s.logger.Warn("not adding server to raft: its raft TLS certificate was refused", "peer", m.Name, "addr", m.Meta.RaftAddr, "err", err)
		}
		return
	}
	err := s.raft.AddVoter(raft.ServerID(m.Name), raft.ServerAddress(m.Meta.RaftAddr), 0, 10*time.Second).Error()
	if err != nil {
		s.logger.Warn("adding server to raft failed", "peer", m.Name, "err", err)
		return
	}
	s.logger.Info("server joined raft", "peer", m.Name, "addr", m.Meta.RaftAddr)
	s.recordEvent("serverJoined", m.Name, fmt.Sprintf("server %s joined raft at %s", m.Name, m.Meta.RaftAddr))
}

// recordEvent puts a membership change in the replicated event log.
func (s *Server) recordEvent(typ, node, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.applyLogged(ctx, fsm.RecordEventType, &fsm.RecordEventRequest{Type: typ, NodeID: node, Message: msg, Now: s.store.Now().UnixNano()})
}

func (s *Server) removeServer(id, why string) bool {
	if err := s.raft.RemoveServer(raft.ServerID(id), 0, 10*time.Second).Error(); err != nil {
		s.logger.Warn("removing server from raft failed", "peer", id, "err", err)
		return false
	}
	s.logger.Info("server removed from raft", "peer", id, "reason", why)
	s.recordEvent("serverRemoved", id, fmt.Sprintf("server %s removed from raft: %s", id, why))
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
	s := r.s
	if s.gossip == nil || ctx.Err() != nil {
		return
	}
	st := s.store.State()
	idx := st.Index("nodes")
	if !force && idx == r.nodeIndex {
		return
	}
	r.nodeIndex = idx
	var reqs []*fsm.NodeStatusRequest
	now := s.store.Now().UnixNano()
	for _, n := range st.Nodes("") {
		m, ok := s.gossip.Member(n.ID)
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
	applyAll(ctx, s, fsm.NodeStatusType, reqs)
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
func applyAll[T any](ctx context.Context, s *Server, typ fsm.MessageType, reqs []*T) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, req := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func(req *T) {
			defer func() { <-sem; wg.Done() }()
			res, err := s.store.Apply(ctx, typ, req)
			switch {
			case err != nil:
				s.logger.Warn("leader command failed", "type", typ, "err", err)
			case res.Err != nil:
				s.logger.Debug("leader command rejected", "type", typ, "err", res.Err)
			}
		}(req)
	}
	wg.Wait()
}
