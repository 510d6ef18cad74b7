package gossip

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
)

// testNode is one in-process member with its event history.
type testNode struct {
	g  *Gossip
	ft *FaultTransport // nil unless the cluster was built with faults
	mu sync.Mutex
	ev []Event
}

func (n *testNode) name() string { return n.g.LocalName() }

// events returns the types observed for member name, in order.
func (n *testNode) events(name string) []EventType {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []EventType
	for _, e := range n.ev {
		if e.Member.Name == name {
			out = append(out, e.Type)
		}
	}
	return out
}

func (n *testNode) saw(name string, typ EventType) bool {
	return slices.Contains(n.events(name), typ)
}

func (n *testNode) status(name string) Status {
	m, ok := n.g.Member(name)
	if !ok {
		return ""
	}
	return m.Status
}

// testLog forwards to t.Log until the test's cleanups are done, because
// memberlist's goroutines may still log after Shutdown returns.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testMeta(i int) Meta {
	m := Meta{Role: RoleWorker, Pool: "gpu", AZ: fmt.Sprintf("az%d", i%3+1), Cloud: "aws", Version: 1,
		HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 17070+i), Tags: map[string]string{"rack": fmt.Sprint("r", i)}}
	if i == 0 {
		m.Role, m.RaftAddr, m.Pool, m.Tags = RoleServer, "127.0.0.1:17071", "core", nil
	}
	return m
}

// startNode starts member i on 127.0.0.1 with a free port and records its events.
func startNode(t *testing.T, i int, faults bool, logger *slog.Logger) *testNode {
	t.Helper()
	return startNodeAt(t, i, 0, faults, logger)
}

// startNodeAt starts member i on 127.0.0.1:port (0: a free one).
func startNodeAt(t *testing.T, i, port int, faults bool, logger *slog.Logger) *testNode {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeName = fmt.Sprintf("n%d", i+1)
	cfg.BindAddr, cfg.BindPort = "127.0.0.1", port
	cfg.Meta = testMeta(i)
	cfg.ReconnectInterval = 300 * time.Millisecond
	cfg.Logger = logger
	node := &testNode{}
	if faults {
		ft, err := NewNetFaultTransport("127.0.0.1", logger)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Transport, node.ft = ft, ft
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	node.g = g
	t.Cleanup(func() { _ = g.Shutdown() })
	go func() {
		for ev := range g.Events() {
			node.mu.Lock()
			node.ev = append(node.ev, ev)
			node.mu.Unlock()
		}
	}()
	return node
}

// startCluster starts n members, joins them to the first and waits until
// everyone sees everyone alive.
func startCluster(t *testing.T, n int, faults bool) []*testNode {
	t.Helper()
	logw := &testLog{t: t}
	t.Cleanup(func() { logw.mu.Lock(); logw.done = true; logw.mu.Unlock() })
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	nodes := make([]*testNode, n)
	for i := range n {
		nodes[i] = startNode(t, i, faults, logger)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("view of %s: %+v", n.name(), n.g.Members())
			}
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, node := range nodes[1:] {
		if _, err := node.g.Join(ctx, []string{nodes[0].g.LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, 10*time.Second, "everyone sees everyone alive", func() error {
		for _, a := range nodes {
			for _, b := range nodes {
				if st := a.status(b.name()); st != StatusAlive {
					return fmt.Errorf("%s sees %s as %q", a.name(), b.name(), st)
				}
			}
		}
		return nil
	})
	return nodes
}

// views is how each node sees each other one, for failure messages.
func views(nodes ...*testNode) string {
	var out []string
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				out = append(out, fmt.Sprintf("%s→%s %s", a.name(), b.name(), a.status(b.name())))
			}
		}
	}
	return strings.Join(out, ", ")
}

func TestClusterMembersAndMeta(t *testing.T) {
	nodes := startCluster(t, 3, false)
	for _, obs := range nodes {
		ms := obs.g.Members()
		if len(ms) != 3 || obs.g.NumMembers() != 3 {
			t.Fatalf("%s sees %d members (%d live)", obs.name(), len(ms), obs.g.NumMembers())
		}
		for i, m := range ms { // sorted by name: n1, n2, n3
			if m.Name != nodes[i].name() || !metaEqual(m.Meta, testMeta(i)) {
				t.Fatalf("%s sees %+v, want name %s meta %+v", obs.name(), m, nodes[i].name(), testMeta(i))
			}
			if m.Address() != nodes[i].g.LocalAddr() || m.LastSeen.IsZero() {
				t.Fatalf("%s sees %s at %s (last seen %v)", obs.name(), m.Name, m.Address(), m.LastSeen)
			}
		}
		for _, n := range nodes {
			if !obs.saw(n.name(), MemberJoin) {
				t.Fatalf("%s saw no join for %s: %v", obs.name(), n.name(), obs.events(n.name()))
			}
		}
	}

	// A metadata change reaches everyone, with an update event.
	target := nodes[1]
	newMeta := testMeta(1)
	newMeta.Pool, newMeta.Tags = "cpu", map[string]string{"rack": "r9", "drain": "soon"}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := target.g.UpdateMeta(ctx, newMeta); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "metadata update propagates", func() error {
		for _, obs := range nodes {
			m, _ := obs.g.Member(target.name())
			if !metaEqual(m.Meta, newMeta) || !obs.saw(target.name(), MemberUpdate) {
				return fmt.Errorf("%s sees meta %+v after events %v", obs.name(), m.Meta, obs.events(target.name()))
			}
		}
		return nil
	})

	// Oversized metadata is refused locally, without a memberlist panic, and
	// the advertised metadata stays as it was.
	huge := newMeta
	huge.Tags = map[string]string{"blob": strings.Repeat("x", 600)}
	if err := target.g.UpdateMeta(ctx, huge); !errorsIs(err, ErrMetaTooLarge) {
		t.Fatalf("UpdateMeta(huge) = %v, want ErrMetaTooLarge", err)
	}
	if m, _ := target.g.Member(target.name()); !metaEqual(m.Meta, newMeta) {
		t.Fatalf("local meta changed by a rejected update: %+v", m.Meta)
	}
}

func TestSuspectThenDead(t *testing.T) {
	nodes := startCluster(t, 3, false)
	victim := nodes[2]
	if err := victim.g.Shutdown(); err != nil {
		t.Fatal(err)
	}
	observers := nodes[:2]
	poll.Eventually(t, 15*time.Second, "observers see the stopped node dead", func() error {
		for _, obs := range observers {
			if obs.status(victim.name()) != StatusDead || !obs.saw(victim.name(), MemberDead) {
				return fmt.Errorf("%s sees %s as %q after events %v", obs.name(), victim.name(), obs.status(victim.name()), obs.events(victim.name()))
			}
		}
		return nil
	})
	// Suspicion is observed from a node's own failed probe; in a 3-node
	// cluster at least one observer probes the victim before it is declared dead.
	suspected := false
	for _, obs := range observers {
		evs := obs.events(victim.name())
		i, j := slices.Index(evs, MemberSuspect), slices.Index(evs, MemberDead)
		if i >= 0 && i < j {
			suspected = true
		}
		if obs.g.NumMembers() != 2 || len(obs.g.Members()) != 3 {
			t.Fatalf("%s: NumMembers %d, Members %d", obs.name(), obs.g.NumMembers(), len(obs.g.Members()))
		}
	}
	if !suspected {
		t.Fatalf("no observer reported suspect before dead: %v / %v",
			observers[0].events(victim.name()), observers[1].events(victim.name()))
	}
}

func TestGracefulLeave(t *testing.T) {
	nodes := startCluster(t, 3, false)
	leaver := nodes[2]
	if err := leaver.g.Leave(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := leaver.status(leaver.name()); got != StatusLeft {
		t.Fatalf("leaver sees itself %q", got)
	}
	if err := leaver.g.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, obs := range nodes[:2] {
		poll.Eventually(t, 10*time.Second, obs.name()+" sees the leaver left", func() error {
			return poll.Check(obs.status(leaver.name()) == StatusLeft && obs.saw(leaver.name(), MemberLeft),
				"status %q after events %v", obs.status(leaver.name()), obs.events(leaver.name()))
		})
		if obs.saw(leaver.name(), MemberDead) {
			t.Fatalf("%s reported a graceful leave as dead: %v", obs.name(), obs.events(leaver.name()))
		}
	}
}

// TestRejoinAfterGracefulRestart: a member that left gracefully and comes
// back at its address without joining anyone (the first server of the
// README's cluster has no --join) is reconnected by the others. Only dead
// members were: after a rolling restart of every server a worker saw each
// of them leave, never met them again, and its node read ready for good,
// even after the worker died.
func TestRejoinAfterGracefulRestart(t *testing.T) {
	nodes := startCluster(t, 3, false)
	leaver := nodes[0]
	_, portStr, _ := strings.Cut(leaver.g.LocalAddr(), ":")
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	if err := leaver.g.Leave(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := leaver.g.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, obs := range nodes[1:] {
		poll.Eventually(t, 10*time.Second, obs.name()+" sees the leaver left", func() error {
			return poll.Check(obs.status(leaver.name()) == StatusLeft, "status %q", obs.status(leaver.name()))
		})
	}
	back := startNodeAt(t, 0, port, false, slog.New(slog.DiscardHandler)) // joins no one
	poll.Eventually(t, 15*time.Second, "the others reconnect to the member that came back", func() error {
		return poll.Check(nodes[1].status(back.name()) == StatusAlive && back.status(nodes[2].name()) == StatusAlive,
			"%s", views(back, nodes[1], nodes[2]))
	})
}

func TestPartitionAndHeal(t *testing.T) {
	nodes := startCluster(t, 3, true)
	a, b, c := nodes[0], nodes[1], nodes[2]
	Partition([]*FaultTransport{c.ft}, []*FaultTransport{a.ft, b.ft})
	poll.Eventually(t, 15*time.Second, "both sides see the other dead", func() error {
		return poll.Check(a.status(c.name()) == StatusDead && b.status(c.name()) == StatusDead &&
			c.status(a.name()) == StatusDead && c.status(b.name()) == StatusDead &&
			a.status(b.name()) == StatusAlive, "views: %s", views(a, b, c))
	})
	Heal(a.ft, b.ft, c.ft)
	poll.Eventually(t, 20*time.Second, "the partition merges again", func() error {
		return poll.Check(a.status(c.name()) == StatusAlive && b.status(c.name()) == StatusAlive &&
			c.status(a.name()) == StatusAlive && c.status(b.name()) == StatusAlive, "views: %s", views(a, b, c))
	})
	for _, obs := range []*testNode{a, b} {
		evs := obs.events(c.name())
		if d := slices.Index(evs, MemberDead); d < 0 || !slices.Contains(evs[d:], MemberJoin) {
			t.Fatalf("%s: want dead then join for %s, got %v", obs.name(), c.name(), evs)
		}
	}
}
