//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amserver/amserver/api"
)

// pollEvery is how often the harness re-checks a condition: often enough
// that waits end within a fraction of an election timeout.
const pollEvery = 250 * time.Millisecond

// poll calls cond until it returns nil, a non-errNotYet error, or within
// passes; a timeout reports the last reason cond gave.
func poll(ctx context.Context, within time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNotYet) {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", within, last)
		case <-time.After(pollEvery):
		}
	}
}

// notYet wraps a reason as errNotYet.
func notYet(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotYet, fmt.Sprintf(format, args...))
}

// WaitHealthy waits until every server knows the same leader and counts
// every server as a Raft peer, every server is a voter, and every worker
// is registered and ready. Between nemeses this is the "healed" state.
func (c *Cluster) WaitHealthy(ctx context.Context, within time.Duration) error {
	return poll(ctx, within, func(ctx context.Context) error {
		leader, err := c.agreedLeader(ctx)
		if err != nil {
			return err
		}
		cl := c.Client(leader)
		peers, err := cl.Peers(ctx)
		if err != nil {
			return notYet("peers from %s: %v", leader, err)
		}
		voters := 0
		for _, p := range peers {
			if p.Suffrage == "voter" {
				voters++
			}
		}
		if voters != len(c.Servers) || len(peers) != len(c.Servers) {
			return notYet("%d voters of %d peers, want %d", voters, len(peers), len(c.Servers))
		}
		nodes, _, err := cl.Nodes(ctx, api.NodeFilter{Status: api.NodeReady}, nil)
		if err != nil {
			return notYet("nodes from %s: %v", leader, err)
		}
		if len(nodes) != len(c.Workers) {
			return notYet("%d of %d workers ready", len(nodes), len(c.Workers))
		}
		return nil
	})
}

// agreedLeader asks every server's health: all must know a leader, all
// must name the same one, and all must count every server as a peer.
func (c *Cluster) agreedLeader(ctx context.Context) (string, error) {
	leader := ""
	for _, s := range c.Servers {
		h, err := c.Client(s.ID).Health(ctx)
		if err != nil {
			return "", notYet("health of %s: %v", s.ID, err)
		}
		switch {
		case !h.KnownLeader || h.Leader == "":
			return "", notYet("%s knows no leader", s.ID)
		case leader != "" && h.Leader != leader:
			return "", notYet("%s names leader %s, others %s", s.ID, h.Leader, leader)
		case h.Peers != len(c.Servers):
			return "", notYet("%s counts %d raft peers", s.ID, h.Peers)
		}
		leader = h.Leader
	}
	return leader, nil
}

// Leader returns the server that says it is the leader, if exactly one
// does; nemeses aim at it. It waits out an election in progress.
func (c *Cluster) Leader(ctx context.Context) (Node, error) {
	var id string
	err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		var leaders []string
		for _, s := range c.Servers {
			h, err := c.Client(s.ID).Health(ctx)
			if err == nil && h.IsLeader {
				leaders = append(leaders, s.ID)
			}
		}
		if len(leaders) != 1 {
			return notYet("servers claiming leadership: %v", leaders)
		}
		id = leaders[0]
		return nil
	})
	if err != nil {
		return Node{}, fmt.Errorf("e2e: find the leader: %w", err)
	}
	return c.Server(id)
}
