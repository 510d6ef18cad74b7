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

// The spare server of compose.spare.yml, and its secure overlay.
const (
	spareComposeFile       = "compose.spare.yml"
	secureSpareComposeFile = "compose.secure.spare.yml"
	spareID                = "server-4"
)

// swapNemesis is an operator replacing a server under load, the way
// docs/operations.md tells one to: a new server is started with only
// --join and the leader adds it as a voter; then an old one (any, the
// leader included) is stopped with SIGTERM and taken out of the Raft
// configuration (its graceful leave, and `operator raft remove-peer`
// through the API in case the leave did not). Heal does the reverse: the
// old server comes back with its data and is re-added, and the spare is
// stopped, removed from the configuration and deleted.
type swapNemesis struct {
	name    string
	c       *Cluster
	rng     *rand.Rand
	removed *Node // the original server taken out by Start
	spare   bool  // the spare container exists
}

func newSwap(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &swapNemesis{name: name, c: c, rng: rng}
}

func (n *swapNemesis) Name() string { return n.name }

// spareFiles are the compose files that know the spare service.
func (n *swapNemesis) spareFiles() []string {
	files := append(slices.Clone(n.c.files), spareComposeFile)
	if n.c.sec != nil {
		files = append(files, secureSpareComposeFile)
	}
	return files
}

func (n *swapNemesis) Start(ctx context.Context) error {
	if _, err := n.c.composeWith(ctx, n.spareFiles(), "up", "-d", "--no-deps", spareID); err != nil {
		return fmt.Errorf("e2e: %s: start %s: %w", n.name, spareID, err)
	}
	n.spare = true
	n.c.logf("nemesis %s: started %s", n.name, spareID)
	if err := n.waitVoter(ctx, n.c.Servers, spareID); err != nil {
		return err
	}
	v := n.c.Servers[n.rng.IntN(len(n.c.Servers))]
	// SIGTERM: a leader hands over leadership first, then the server
	// leaves gossip and the leader removes it. -t 10: the shutdown budget
	// is 5 s, the rest is slack for a loaded machine.
	if _, err := docker(ctx, "stop", "-t", "10", v.Container); err != nil {
		return fmt.Errorf("e2e: %s: stop %s: %w", n.name, v.ID, err)
	}
	n.removed = &v
	n.c.logf("nemesis %s: stopped %s", n.name, v.ID)
	survivors := n.c.Others(v.ID)
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		return removeVia(ctx, n.c, survivors, v.ID)
	}); err != nil {
		return fmt.Errorf("e2e: %s: remove %s: %w", n.name, v.ID, err)
	}
	n.c.logf("nemesis %s: %s is out of the raft configuration", n.name, v.ID)
	return nil
}

// waitVoter waits until a server asked through one of via lists id as a
// voter (the leader may be the spare, which the harness has no client for).
func (n *swapNemesis) waitVoter(ctx context.Context, via []Node, id string) error {
	err := poll(ctx, rejoinWithin, func(ctx context.Context) error {
		peers, err := peersVia(ctx, n.c, via)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(peers, func(p api.Peer) bool { return p.ID == id && p.Suffrage == "voter" }) {
			return nil
		}
		return notYet("%s is not a voter yet: %v", id, peers)
	})
	if err != nil {
		return fmt.Errorf("e2e: %s: %s never became a voter: %w", n.name, id, err)
	}
	n.c.logf("nemesis %s: %s is a voter", n.name, id)
	return nil
}

// Heal brings the removed server back, then retires the spare, so the
// cluster ends as it began: its three servers, all voters.
func (n *swapNemesis) Heal(ctx context.Context) error {
	if v := n.removed; v != nil {
		if _, err := docker(ctx, "start", v.Container); err != nil {
			return fmt.Errorf("e2e: %s: start %s: %w", n.name, v.ID, err)
		}
		n.removed = nil
		if err := n.waitVoter(ctx, n.c.Servers, v.ID); err != nil {
			return err
		}
	}
	if !n.spare {
		return nil
	}
	if _, err := n.c.composeWith(ctx, n.spareFiles(), "stop", "-t", "10", spareID); err != nil {
		return fmt.Errorf("e2e: %s: stop %s: %w", n.name, spareID, err)
	}
	if err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		return removeVia(ctx, n.c, n.c.Servers, spareID)
	}); err != nil {
		return fmt.Errorf("e2e: %s: remove %s: %w", n.name, spareID, err)
	}
	if _, err := n.c.composeWith(ctx, n.spareFiles(), "rm", "-f", "-s", "-v", spareID); err != nil {
		return fmt.Errorf("e2e: %s: delete %s: %w", n.name, spareID, err)
	}
	n.spare = false
	n.c.logf("nemesis %s: %s stopped, removed from raft and deleted", n.name, spareID)
	return nil
}

// peersVia reads the Raft configuration from the first of via that answers.
func peersVia(ctx context.Context, c *Cluster, via []Node) ([]api.Peer, error) {
	var errs []string
	for _, s := range via {
		peers, err := c.Client(s.ID).Peers(ctx)
		if err == nil {
			return peers, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", s.ID, err))
	}
	return nil, notYet("peers: %v", errs)
}

// removeVia is removeAndCheck through the first of via that answers: the
// API's remove-peer, repeated until the configuration no longer lists id.
func removeVia(ctx context.Context, c *Cluster, via []Node, id string) error {
	var last error
	for _, s := range via {
		if last = removeAndCheck(ctx, c.Client(s.ID), id); last == nil {
			return nil
		}
	}
	return last
}
