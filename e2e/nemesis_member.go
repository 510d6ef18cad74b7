//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/amserver/amserver/api"
)

// rejoinWithin bounds how long a restarted server may take to be a voter
// again: gossip must see it alive (a probe round, or the 5 s reconnect of
// dead members) and the leader's reconciler (1 s tick) must add it.
const rejoinWithin = 60 * time.Second

// membershipNemesis changes the Raft configuration under load: it crashes a
// follower, removes it with DELETE /v1/operator/raft/peers/{id}, and on
// heal starts it again and waits until the leader's reconciler has added
// it back as a voter (agent/reconcile.go: an alive server in gossip that
// is not in the configuration is added).
type membershipNemesis struct {
	name   string
	c      *Cluster
	rng    *rand.Rand
	victim *Node
}

func newMembership(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &membershipNemesis{name: name, c: c, rng: rng}
}

func (n *membershipNemesis) Name() string { return n.name }

func (n *membershipNemesis) Start(ctx context.Context) error {
	leader, err := n.c.Leader(ctx)
	if err != nil {
		return err
	}
	others := n.c.Others(leader.ID)
	v := others[n.rng.IntN(len(others))]
	// A crash, not docker stop: a graceful leave would make the leader
	// remove the server itself, and the operator removal is what we test.
	if _, err := docker(ctx, "kill", "-s", "KILL", v.Container); err != nil {
		return fmt.Errorf("e2e: %s: kill %s: %w", n.name, v.ID, err)
	}
	n.victim = &v
	n.c.logf("nemesis %s: killed follower %s", n.name, v.ID)
	survivors := n.c.Others(v.ID)
	// While gossip still reports the crashed server alive, the reconciler
	// would add it straight back: wait until no survivor sees it alive.
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		return n.notAliveAnywhere(ctx, survivors, v.ID)
	}); err != nil {
		return fmt.Errorf("e2e: %s: gossip never noticed %s: %w", n.name, v.ID, err)
	}
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		return removeAndCheck(ctx, n.c.Client(survivors[0].ID), v.ID)
	}); err != nil {
		return fmt.Errorf("e2e: %s: remove %s: %w", n.name, v.ID, err)
	}
	n.c.logf("nemesis %s: removed %s from raft", n.name, v.ID)
	return nil
}

func (n *membershipNemesis) notAliveAnywhere(ctx context.Context, survivors []Node, id string) error {
	for _, s := range survivors {
		members, err := n.c.Client(s.ID).Members(ctx)
		if err != nil {
			return notYet("members from %s: %v", s.ID, err)
		}
		for _, m := range members {
			if m.Name == id && m.Status == "alive" {
				return notYet("%s still sees %s alive", s.ID, id)
			}
		}
	}
	return nil
}

// removeAndCheck asks for the removal (again, after an unknown outcome)
// until the configuration no longer lists the server.
func removeAndCheck(ctx context.Context, cl *api.Client, id string) error {
	peers, err := cl.Peers(ctx)
	if err != nil {
		return notYet("peers: %v", err)
	}
	if !slices.ContainsFunc(peers, func(p api.Peer) bool { return p.ID == id }) {
		return nil
	}
	if err := cl.RemovePeer(ctx, id); err != nil {
		return notYet("remove-peer: %v", err)
	}
	return notYet("removal requested; checking the configuration")
}

// Heal restarts the removed server and waits until it is a voter again. A
// failure here means the server never rejoined on its own, which is a
// finding, not something the harness should paper over.
func (n *membershipNemesis) Heal(ctx context.Context) error {
	if n.victim == nil {
		return nil
	}
	v := *n.victim
	if _, err := docker(ctx, "start", v.Container); err != nil {
		return fmt.Errorf("e2e: %s: start %s: %w", n.name, v.ID, err)
	}
	n.victim = nil
	err := poll(ctx, rejoinWithin, func(ctx context.Context) error {
		leader, err := n.c.Leader(ctx)
		if err != nil {
			return notYet("%v", err)
		}
		peers, err := n.c.Client(leader.ID).Peers(ctx)
		if err != nil {
			return notYet("peers: %v", err)
		}
		for _, p := range peers {
			if p.ID == v.ID && p.Suffrage == "voter" {
				return nil
			}
		}
		return notYet("%s is not a voter yet: %v", v.ID, peers)
	})
	if err != nil {
		return fmt.Errorf("e2e: %s: %s restarted but never became a voter again: %w", n.name, v.ID, err)
	}
	n.c.logf("nemesis %s: %s is a voter again", n.name, v.ID)
	return nil
}
