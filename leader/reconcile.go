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
	nodeIndex uint64          // nodes-table index at the last node pass
	held      map[string]bool // servers whose removal the last pass held back (holdRemoval)
	refused   map[string]bool // nodes whose worker the servers refuse, as last logged
	// absent is when each node an earlier leader saw (ready or suspect)
	// was first found missing from gossip this term: at the term's first
	// node pass, or later when a snapshot restore brought it (unseenGone
	// counts from it). unseen, the nodes written down for it, as logged.
	absent map[string]time.Time
	unseen map[string]bool
}

// defaultUnseenNodeDown is how long a new leader waits for gossip to see a
// node an earlier leader saw (ready or suspect) before it writes the node
// down (Config.UnseenNodeDown). A server that restarted knows only the members that joined it since: a
// worker that died while every server was down is never reported dead,
// only absent, and its node read ready for good, its bundles never failing
// over. A live worker rejoins within its reconnect interval (seconds).
const defaultUnseenNodeDown = time.Minute

func (r *reconciler) Name() string { return "reconcile" }

func (r *reconciler) Run(ctx context.Context) {
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	for {
		watch := r.l.store.WatchCh()
		began := time.Now()
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
			if !waitChange(ctx, nil, dutyGap-time.Since(began)) {
				return
			}
		}
	}
}

// servers adds alive servers as voters, removes servers that left, and
// removes dead ones only after the cleanup delay and never below quorum;
// it removes none whose removal leaves the other voters without a live
// majority (liveMajorityWithout).
func (r *reconciler) servers(ctx context.Context) {
	l := r.l
	if l.cfg.Membership == nil || l.cfg.Voters == nil || ctx.Err() != nil {
		return
	}
	current, err := l.cfg.Voters.Voters()
	if err != nil {
		return
	}
	current = maps.Clone(current) // removals below are struck from it
	members := l.cfg.Membership.Members()
	status := make(map[string]gossip.Status, len(members))
	for _, m := range members {
		if m.Meta.Role == gossip.RoleServer {
			status[m.Name] = m.Status
		}
	}
	now := l.clock.Now()
	held := map[string]bool{}
	defer func() { r.held = held }()
	for _, m := range members {
		if m.Meta.Role != gossip.RoleServer || m.Name == l.cfg.NodeID {
			continue
		}
		addr, known := current[m.Name]
		why := ""
		switch {
		case m.Status == gossip.StatusAlive && (!known || addr != m.Meta.RaftAddr):
			l.addVoter(m)
		case known && m.Status == gossip.StatusLeft:
			why = "left gracefully"
		case known && m.Status == gossip.StatusDead && now.Sub(m.Since) >= l.cfg.DeadServerCleanup && len(current)-1 >= l.cfg.QuorumSize:
			why = "dead for longer than the cleanup delay"
		}
		if why == "" {
			continue
		}
		if !r.liveMajorityWithout(current, status, m.Name) {
			held[m.Name] = true
			if !r.held[m.Name] { // said once while it lasts
				l.log.Warn("not removing server from raft yet: the other voters have no live majority without it",
					"peer", m.Name, "reason", why)
			}
			continue
		}
		if l.removeServer(m.Name, why) {
			delete(current, m.Name)
		}
	}
}

// liveMajorityWithout reports whether the voters other than id, this
// leader among them, have a majority alive in gossip. Raft uses a new
// configuration from the moment it is appended: removing a server that
// left while another is dead (three voters: one left, one dead) leaves one
// live voter of two, the leader steps down, and the server that left is
// refused when it comes back, as it is no longer a voter; no leader until
// the dead one returns. Kept in the configuration, it restores the
// majority by restarting.
func (r *reconciler) liveMajorityWithout(current map[string]string, status map[string]gossip.Status, id string) bool {
	alive, voters := 0, 0
	for v := range current {
		if v == id {
			continue
		}
		voters++
		if v == r.l.cfg.NodeID || status[v] == gossip.StatusAlive {
			alive++
		}
	}
	return alive > voters/2
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
	at := l.clock.Now()
	now := at.UnixNano()
	absent := map[string]time.Time{}
	defer func() { r.absent = absent }()
	for _, n := range st.Nodes("") {
		m, ok := l.cfg.Membership.Member(n.ID)
		if !ok {
			// Never seen in gossip: unknown stays unknown until it joins;
			// one an earlier leader saw is down once it stayed away.
			if r.unseenGone(n, at, absent) {
				reqs = append(reqs, &fsm.NodeStatusRequest{NodeID: n.ID, Status: fsm.NodeDown, Now: now})
			}
			continue
		}
		want := gossipStatus[m.Status]
		if r.refusedWorker(n.ID, m) && want == fsm.NodeReady {
			// Its worker runs nothing new: ready would draw placements
			// that never start. Suspect places nothing and moves nothing.
			want = fsm.NodeSuspect
		}
		labels := maps.Clone(n.Labels)
		setIfSet(&labels, "az", m.Meta.AZ)
		setIfSet(&labels, "cloud", m.Meta.Cloud)
		if want != n.Status || !maps.Equal(labels, n.Labels) {
			reqs = append(reqs, &fsm.NodeStatusRequest{NodeID: n.ID, Status: want, AZ: m.Meta.AZ, Cloud: m.Meta.Cloud, Now: now})
		}
	}
	applyAll(ctx, l, fsm.NodeStatusType, reqs)
}

// unseenGone says whether node n, absent from this server's gossip, has
// been so for Config.UnseenNodeDown since this leader first found it
// missing while its status says an earlier leader saw it; it records in
// absent since when, and logs the node the first time. Counting per node
// rather than from the term's start gives the nodes a restored snapshot
// brings the same time to join as a new term gives: a restore late in a
// term wrote them down at once, failing over what their workers ran.
func (r *reconciler) unseenGone(n *fsm.Node, at time.Time, absent map[string]time.Time) bool {
	wait := r.l.cfg.UnseenNodeDown
	if n.Status != fsm.NodeReady && n.Status != fsm.NodeSuspect || wait < 0 {
		return false
	}
	since, ok := r.absent[n.ID]
	if !ok {
		since = at
	}
	absent[n.ID] = since
	if at.Sub(since) < wait {
		return false
	}
	if !r.unseen[n.ID] {
		if r.unseen == nil {
			r.unseen = map[string]bool{}
		}
		r.unseen[n.ID] = true
		r.l.log.Warn(msgUnseenDown, "node", n.ID, "after", wait)
	}
	return true
}

const msgUnseenDown = "node not seen in gossip since this leader first looked for it (its term's start, or the restore that brought it): writing it down"

const msgWorkerRefused = "the servers refuse this node's worker (its log says why), so the node is suspect: no new placements"

// refusedWorker reports whether node's worker says the servers refuse it
// (gossip.TagRegistration), and logs when that starts and ends.
func (r *reconciler) refusedWorker(node string, m gossip.Member) bool {
	refused := m.Meta.Tags[gossip.TagRegistration] == gossip.RegistrationRefused
	if refused == r.refused[node] {
		return refused
	}
	if refused {
		r.l.log.Warn(msgWorkerRefused, "node", node)
	} else {
		r.l.log.Info("this node's worker is registered again", "node", node)
	}
	if r.refused == nil {
		r.refused = map[string]bool{}
	}
	if refused {
		r.refused[node] = true
	} else {
		delete(r.refused, node)
	}
	return refused
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
