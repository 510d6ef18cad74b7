//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
)

// rollingNemesis is the upgrade procedure of docs/operations.md §5 under
// load: every server in turn, followers first and the leader last, is
// stopped with SIGTERM (a leader hands over leadership, the server leaves
// and the leader removes it from Raft), started again with its data, and
// the next one waits until the cluster is healthy again: one leader all
// servers agree on, every server a voter, every worker ready.
type rollingNemesis struct {
	name string
	c    *Cluster
	// down is the server stopped and not yet started, if Start failed
	// half-way through a restart.
	down *Node
}

func newRolling(name string, c *Cluster, _ *rand.Rand) Nemesis {
	return &rollingNemesis{name: name, c: c}
}

func (n *rollingNemesis) Name() string { return n.name }

func (n *rollingNemesis) Start(ctx context.Context) error {
	leader, err := n.c.Leader(ctx)
	if err != nil {
		return err
	}
	for _, s := range restartOrder(n.c.Servers, leader.ID) {
		if err := n.restart(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func (n *rollingNemesis) restart(ctx context.Context, s Node) error {
	if _, err := docker(ctx, "stop", "-t", "10", s.Container); err != nil {
		return fmt.Errorf("e2e: %s: stop %s: %w", n.name, s.ID, err)
	}
	n.down = &s
	n.c.logf("nemesis %s: stopped %s", n.name, s.ID)
	if _, err := docker(ctx, "start", s.Container); err != nil {
		return fmt.Errorf("e2e: %s: start %s: %w", n.name, s.ID, err)
	}
	n.down = nil
	if err := n.c.WaitHealthy(ctx, rejoinWithin); err != nil {
		return fmt.Errorf("e2e: %s: cluster not healthy after restarting %s: %w", n.name, s.ID, err)
	}
	n.c.logf("nemesis %s: %s restarted, cluster healthy", n.name, s.ID)
	return nil
}

// Heal starts a server that a failed Start left stopped; after a complete
// rolling restart there is nothing to undo.
func (n *rollingNemesis) Heal(ctx context.Context) error {
	if n.down == nil {
		return nil
	}
	s := *n.down
	if _, err := docker(ctx, "start", s.Container); err != nil {
		return fmt.Errorf("e2e: %s: start %s: %w", n.name, s.ID, err)
	}
	n.down = nil
	return nil
}

// restartOrder is every server once, followers in id order, the leader
// last: restarting it first would cost an extra election per follower.
func restartOrder(servers []Node, leader string) []Node {
	out := slices.DeleteFunc(slices.Clone(servers), func(s Node) bool { return s.ID == leader })
	for _, s := range servers {
		if s.ID == leader {
			out = append(out, s)
		}
	}
	return out
}
