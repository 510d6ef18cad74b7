package leader

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

// TestReconcileServers: alive servers become voters (or get their new
// address), servers that left are removed, dead ones only after
// DeadServerCleanup on the leader's clock and never below QuorumSize, and
// the leader never removes itself.
func TestReconcileServers(t *testing.T) {
	const cleanup = 5 * time.Minute
	tests := []struct {
		name    string
		voters  []string // besides s1, the leader, at their usual address
		quorum  int
		members []peer
		calls   []string
		events  []string // event types recorded
	}{
		{"adds an alive server", nil, 2, []peer{{"s2", gossip.StatusAlive, 0}},
			[]string{"add s2@10.0.0.2:7001"}, []string{"serverJoined"}},
		{"new address", []string{"s2"}, 2, []peer{{"s2:10.9.9.9:7001", gossip.StatusAlive, 0}},
			[]string{"add s2@10.9.9.9:7001"}, []string{"serverJoined"}},
		{"known and alive", []string{"s2"}, 2, []peer{{"s2", gossip.StatusAlive, 0}}, nil, nil},
		{"ignores workers", nil, 2, []peer{{"w1", gossip.StatusAlive, 0}}, nil, nil},
		{"removes a server that left", []string{"s2"}, 3, []peer{{"s2", gossip.StatusLeft, 0}},
			[]string{"remove s2"}, []string{"serverRemoved"}},
		{"suspect stays", []string{"s2", "s3"}, 2, []peer{{"s2", gossip.StatusSuspect, time.Hour}}, nil, nil},
		{"dead, not long enough", []string{"s2", "s3"}, 2, []peer{{"s2", gossip.StatusDead, cleanup - time.Second}}, nil, nil},
		{"dead long enough", []string{"s2", "s3"}, 2, []peer{{"s2", gossip.StatusDead, cleanup}, {"s3", gossip.StatusAlive, 0}},
			[]string{"remove s2"}, []string{"serverRemoved"}},
		{"dead but at quorum", []string{"s2"}, 2, []peer{{"s2", gossip.StatusDead, time.Hour}}, nil, nil},
		{"two dead, quorum allows one", []string{"s2", "s3", "s4"}, 3,
			[]peer{{"s2", gossip.StatusDead, time.Hour}, {"s3", gossip.StatusDead, time.Hour}, {"s4", gossip.StatusAlive, 0}},
			[]string{"remove s2"}, []string{"serverRemoved"}},
		{"a leave counts against quorum", []string{"s2", "s3", "s4"}, 3,
			[]peer{{"s2", gossip.StatusLeft, 0}, {"s3", gossip.StatusDead, time.Hour}, {"s4", gossip.StatusAlive, 0}},
			[]string{"remove s2"}, []string{"serverRemoved"}},
		// One voter left, one dead: without the one that left, one live
		// voter of two; removed, it could not rejoin when it restarts.
		{"a leave that would leave no live majority waits", []string{"s2", "s3"}, 2,
			[]peer{{"s2", gossip.StatusLeft, 0}, {"s3", gossip.StatusDead, time.Hour}}, nil, nil},
		{"a leave waits while another voter is suspect", []string{"s2", "s3"}, 2,
			[]peer{{"s2", gossip.StatusLeft, 0}, {"s3", gossip.StatusSuspect, time.Minute}}, nil, nil},
		{"a voter gossip does not know is not counted alive", []string{"s2", "s3"}, 2,
			[]peer{{"s2", gossip.StatusLeft, 0}}, nil, nil},
		{"dead long enough, but the rest has no live majority", []string{"s2", "s3", "s4", "s5"}, 3,
			[]peer{{"s2", gossip.StatusDead, time.Hour}, {"s3", gossip.StatusDead, time.Hour}, {"s4", gossip.StatusDead, time.Hour}, {"s5", gossip.StatusAlive, 0}},
			nil, nil},
		{"never itself, left", []string{"s2", "s3"}, 1, []peer{{"s1", gossip.StatusLeft, 0}}, nil, nil},
		{"never itself, dead", []string{"s2", "s3"}, 1, []peer{{"s1", gossip.StatusDead, time.Hour}}, nil, nil},
		{"unknown dead server", nil, 1, []peer{{"s2", gossip.StatusDead, time.Hour}}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.QuorumSize, c.DeadServerCleanup = tc.quorum, cleanup })
			for _, id := range tc.voters {
				e.voters.voters[id] = serverAddr(id)
			}
			for _, p := range tc.members {
				e.members.set(p.member(e.clock.Now()))
			}
			(&reconciler{l: e.l}).servers(e.ctx)
			if got := e.voters.takeCalls(); !slices.Equal(got, tc.calls) {
				t.Fatalf("voter changes %v, want %v", got, tc.calls)
			}
			if got := eventTypes(e.store.take()); !slices.Equal(got, tc.events) {
				t.Fatalf("events %v, want %v", got, tc.events)
			}
		})
	}
}

// peer is a gossip member in a table: "s…" names a server (at its usual
// address unless the name carries one after a colon), "w…" a worker; it
// has been in its status for ago.
type peer struct {
	name   string
	status gossip.Status
	ago    time.Duration
}

func (p peer) member(now time.Time) gossip.Member {
	name, addr, _ := strings.Cut(p.name, ":")
	role := gossip.RoleServer
	if strings.HasPrefix(name, "w") {
		role = gossip.RoleWorker
	}
	m := member(name, role, p.status, now.Add(-p.ago))
	if addr != "" {
		m.Meta.RaftAddr = addr
	}
	return m
}

func serverAddr(id string) string { return "10.0.0." + id[1:] + ":7001" }

// eventTypes lists the types of the RecordEvent commands proposed.
func eventTypes(ps []proposal) []string {
	var out []string
	for _, p := range ps {
		if req, ok := p.body.(*fsm.RecordEventRequest); ok {
			out = append(out, req.Type)
		}
	}
	return out
}

// TestReconcileDeadServerCleanup: the same dead server is removed once
// DeadServerCleanup has passed on the fake clock, and not before.
func TestReconcileDeadServerCleanup(t *testing.T) {
	e := newEnv(t)
	e.voters.voters["s2"], e.voters.voters["s3"] = "10.0.0.2:7001", "10.0.0.3:7001"
	e.members.set(member("s2", gossip.RoleServer, gossip.StatusDead, e.clock.Now()))
	e.members.set(member("s3", gossip.RoleServer, gossip.StatusAlive, e.clock.Now()))
	r := &reconciler{l: e.l}
	for _, step := range []time.Duration{0, time.Minute, 3*time.Minute + 59*time.Second} {
		e.clock.Advance(step)
		r.servers(e.ctx)
		if calls := e.voters.takeCalls(); len(calls) != 0 {
			t.Fatalf("removed after %s: %v", step, calls)
		}
	}
	e.clock.Advance(time.Second)
	r.servers(e.ctx)
	if calls := e.voters.takeCalls(); !slices.Equal(calls, []string{"remove s2"}) {
		t.Fatalf("after the cleanup delay: %v, want s2 removed", calls)
	}
}

// TestReconcileVoterErrors: a refused change is logged (a probe backoff,
// which repeats every pass while it lasts, is not) and records no event;
// no voter list means no change at all.
func TestReconcileVoterErrors(t *testing.T) {
	tests := []struct {
		name     string
		refuse   error
		listErr  error
		warnings int
		calls    int
	}{
		{"probe backoff", fmt.Errorf("add s2: %w", raftstore.ErrProbeBackoff), nil, 0, 3},
		{"other error", raftstore.ErrNotLeader, nil, 3, 3},
		{"no voter list", nil, raftstore.ErrNotLeader, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.voters.refuse, e.voters.listErr = tc.refuse, tc.listErr
			e.members.set(peer{"s2", gossip.StatusAlive, 0}.member(e.clock.Now()))
			r := &reconciler{l: e.l}
			for range 3 {
				r.servers(e.ctx)
			}
			if got := len(e.voters.takeCalls()); got != tc.calls {
				t.Fatalf("%d AddVoter calls, want %d", got, tc.calls)
			}
			if got := e.logs.Count(slog.LevelWarn, "not adding server to raft"); got != tc.warnings {
				t.Fatalf("%d warnings, want %d", got, tc.warnings)
			}
			if ps := e.store.take(); len(ps) != 0 {
				t.Fatalf("proposed %v for a refused change", typesOf(ps))
			}
		})
	}
}

// TestReconcileNodes: gossip states become node statuses, and a node's AZ
// and cloud from gossip become its labels; a node gossip never saw stays
// unknown, and a node already in line is not written again.
func TestReconcileNodes(t *testing.T) {
	tests := []struct {
		name      string
		status    string // registered node's status before
		gossip    gossip.Status
		az        string
		refused   bool // its worker's registration is refused (gossip tag)
		want      string
		wantAZ    string
		proposals int
	}{
		{"alive makes ready", fsm.NodeUnknown, gossip.StatusAlive, "", false, fsm.NodeReady, "az-n1", 1},
		{"suspect", fsm.NodeReady, gossip.StatusSuspect, "", false, fsm.NodeSuspect, "az-n1", 1},
		{"dead makes down", fsm.NodeReady, gossip.StatusDead, "", false, fsm.NodeDown, "az-n1", 1},
		{"left", fsm.NodeReady, gossip.StatusLeft, "", false, fsm.NodeLeft, "az-n1", 1},
		{"back from down", fsm.NodeDown, gossip.StatusAlive, "", false, fsm.NodeReady, "az-n1", 1},
		{"label only", fsm.NodeReady, gossip.StatusAlive, "eu-1a", false, fsm.NodeReady, "eu-1a", 1},
		{"in line", fsm.NodeReady, gossip.StatusAlive, "az-n1", false, fsm.NodeReady, "az-n1", 0},
		{"never in gossip", fsm.NodeUnknown, "", "", false, fsm.NodeUnknown, "az-n1", 0},
		{"refused worker is suspect", fsm.NodeReady, gossip.StatusAlive, "az-n1", true, fsm.NodeSuspect, "az-n1", 1},
		{"refusal ended", fsm.NodeSuspect, gossip.StatusAlive, "az-n1", false, fsm.NodeReady, "az-n1", 1},
		{"refused and dead is down", fsm.NodeReady, gossip.StatusDead, "az-n1", true, fsm.NodeDown, "az-n1", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.node("n1", "p", 1000, 1, tc.status)
			if tc.gossip != "" {
				m := member("n1", gossip.RoleWorker, tc.gossip, e.clock.Now())
				m.Meta.AZ, m.Meta.Cloud = tc.az, "aws"
				if tc.az == "az-n1" {
					m.Meta.Cloud = "" // in line: nothing new to say
				}
				if tc.refused {
					m.Meta.Tags = map[string]string{gossip.TagRegistration: gossip.RegistrationRefused}
				}
				e.members.set(m)
			}
			e.clock.Advance(time.Second)
			r := &reconciler{l: e.l}
			r.nodes(e.ctx, true)
			n := e.store.State().Node("n1")
			if n.Status != tc.want || n.AZ() != tc.wantAZ {
				t.Fatalf("node %s in %q, want %s in %q", n.Status, n.AZ(), tc.want, tc.wantAZ)
			}
			ps := e.store.take()
			if len(ps) != tc.proposals {
				t.Fatalf("proposed %v, want %d NodeStatus", typesOf(ps), tc.proposals)
			}
			if len(ps) == 1 && ps[0].body.(*fsm.NodeStatusRequest).Now != e.now() {
				t.Fatal("the status is not stamped with the leader's clock")
			}
			r.nodes(e.ctx, true)
			if ps := e.store.take(); len(ps) != 0 {
				t.Fatalf("a second pass proposed %v", typesOf(ps))
			}
		})
	}
}

// TestReconcileNodesOnlyWhenAsked: without force the reconciler looks only
// when the node table changed (gossip changes come with force, from Wake
// or the ticker).
func TestReconcileNodesOnlyWhenAsked(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 1, fsm.NodeReady)
	e.members.set(member("n1", gossip.RoleWorker, gossip.StatusAlive, e.clock.Now()))
	r := &reconciler{l: e.l}
	r.nodes(e.ctx, false) // first look: the table is new to it
	e.members.set(member("n1", gossip.RoleWorker, gossip.StatusDead, e.clock.Now()))
	r.nodes(e.ctx, false)
	if got := e.store.State().Node("n1").Status; got != fsm.NodeReady {
		t.Fatalf("node %s without a table change or force, want ready", got)
	}
	r.nodes(e.ctx, true)
	if got := e.store.State().Node("n1").Status; got != fsm.NodeDown {
		t.Fatalf("node %s with force, want down", got)
	}
}

// TestReconcileManyNodes: a burst of transitions (a partition) is applied
// as one command per node, concurrently, and all land.
func TestReconcileManyNodes(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 100 {
		id := fmt.Sprintf("n%03d", i)
		ids = append(ids, id)
		e.node(id, "p", 1000, 1, fsm.NodeReady)
		e.members.set(member(id, gossip.RoleWorker, gossip.StatusDead, e.clock.Now()))
	}
	(&reconciler{l: e.l}).nodes(e.ctx, true)
	if got := len(e.store.take()); got != len(ids) {
		t.Fatalf("%d proposals, want %d", got, len(ids))
	}
	for _, n := range e.store.State().Nodes("") {
		if n.Status != fsm.NodeDown {
			t.Fatalf("node %s is %s, want down", n.ID, n.Status)
		}
	}
}

// TestReconcileSaysWhenAWorkerIsRefused: the leader says once that a
// node's worker is refused, also when the node was suspect already (a
// worker killed and restarted at once is suspected before it is refused),
// and the node is ready again once the refusal ends.
func TestReconcileSaysWhenAWorkerIsRefused(t *testing.T) {
	e := newEnv(t)
	e.node("n1", "p", 1000, 1, fsm.NodeSuspect)
	m := member("n1", gossip.RoleWorker, gossip.StatusAlive, e.clock.Now())
	m.Meta.AZ = "az-n1"
	m.Meta.Tags = map[string]string{gossip.TagRegistration: gossip.RegistrationRefused}
	e.members.set(m)
	r := &reconciler{l: e.l}
	for range 2 {
		r.nodes(e.ctx, true)
	}
	if ps := e.store.take(); len(ps) != 0 || e.store.State().Node("n1").Status != fsm.NodeSuspect {
		t.Fatalf("proposed %v; node %s, want it left suspect", typesOf(ps), e.store.State().Node("n1").Status)
	}
	if got := e.logs.Count(slog.LevelWarn, msgWorkerRefused); got != 1 {
		t.Fatalf("%d warnings that the worker is refused, want 1", got)
	}
	m.Meta.Tags = nil
	e.members.set(m)
	r.nodes(e.ctx, true)
	if n := e.store.State().Node("n1"); n.Status != fsm.NodeReady {
		t.Fatalf("node %s once the refusal ended, want ready", n.Status)
	}
}

// TestReconcileUnseenNodeGoesDown: a node an earlier leader saw (ready or
// suspect) that this server's gossip has not seen is written down once
// unseenDown passed since the term's first look, and not before; a node
// never seen by anyone stays unknown, and one that joins in time is ready.
func TestReconcileUnseenNodeGoesDown(t *testing.T) {
	e := newEnv(t)
	e.node("gone", "p", 1000, 1, fsm.NodeReady)
	e.node("shaky", "p", 1000, 1, fsm.NodeSuspect)
	e.node("new", "p", 1000, 1, fsm.NodeUnknown)
	e.node("back", "p", 1000, 1, fsm.NodeReady)
	r := &reconciler{l: e.l}
	r.nodes(e.ctx, true)
	e.clock.Advance(defaultUnseenNodeDown - time.Second)
	e.members.set(member("back", gossip.RoleWorker, gossip.StatusAlive, e.clock.Now()))
	r.nodes(e.ctx, true)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("proposed %v before unseenDown passed", typesOf(ps))
	}
	e.clock.Advance(time.Second)
	for range 2 {
		r.nodes(e.ctx, true)
	}
	want := map[string]string{"gone": fsm.NodeDown, "shaky": fsm.NodeDown, "new": fsm.NodeUnknown, "back": fsm.NodeReady}
	for id, status := range want {
		if got := e.store.State().Node(id).Status; got != status {
			t.Errorf("node %s is %s, want %s", id, got, status)
		}
	}
	if ps := e.store.take(); len(ps) != 2 {
		t.Fatalf("proposed %v, want one NodeStatus for each of gone and shaky", typesOf(ps))
	}
	if got := e.logs.Count(slog.LevelWarn, msgUnseenDown); got != 2 {
		t.Fatalf("%d warnings, want one per node", got)
	}
}

// TestReconcileUnseenNodeDownOff: a negative UnseenNodeDown leaves a node
// gossip never saw as it is (nodes registered without a worker).
func TestReconcileUnseenNodeDownOff(t *testing.T) {
	e := newEnv(t)
	e.l.cfg.UnseenNodeDown = -1
	e.node("n1", "p", 1000, 1, fsm.NodeReady)
	r := &reconciler{l: e.l}
	r.nodes(e.ctx, true)
	e.clock.Advance(24 * time.Hour)
	r.nodes(e.ctx, true)
	if ps := e.store.take(); len(ps) != 0 {
		t.Fatalf("proposed %v with UnseenNodeDown off", typesOf(ps))
	}
}
