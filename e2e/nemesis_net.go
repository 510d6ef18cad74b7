//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Partitions cut only server-to-server traffic: Raft (7071/tcp) and gossip
// (7072/tcp+udp) between container addresses. The API port stays open, so
// the host's clients keep talking to minority-side servers and a stale read
// served there would show up in the history. (docker network disconnect
// would cut the clients off too and hide exactly that.) Workers are not
// partitioned: their traffic to servers is HTTP and gossip, and keeping
// them connected is what lets gossip still see a partitioned server alive
// (indirect probes) while Raft cannot reach it.
const (
	faultChain    = "AMSERVER-E2E"
	faultTCPPorts = "7071,7072"
	faultUDPPorts = "7072"
)

// link is one direction of traffic a partition drops: from → to.
type link struct{ from, to Node }

// netNemesis installs a partition planned afresh at each Start.
type netNemesis struct {
	name string
	c    *Cluster
	plan func(ctx context.Context) ([]link, error)
}

func (n *netNemesis) Name() string { return n.name }

// Start drops each planned direction twice, at the sender (OUTPUT -d) and
// at the receiver (INPUT -s), so a rule lost with one side's restart still
// leaves the direction cut.
func (n *netNemesis) Start(ctx context.Context) error {
	links, err := n.plan(ctx)
	if err != nil {
		return err
	}
	rules := map[string][][]string{} // container → rules
	var desc []string
	for _, l := range links {
		rules[l.from.Container] = append(rules[l.from.Container], dropRules("-d", l.to.IP)...)
		rules[l.to.Container] = append(rules[l.to.Container], dropRules("-s", l.from.IP)...)
		desc = append(desc, l.from.ID+"->"+l.to.ID)
	}
	n.c.logf("nemesis %s: drop %s", n.name, strings.Join(desc, " "))
	for container, rs := range rules {
		if err := installRules(ctx, container, rs); err != nil {
			return fmt.Errorf("e2e: %s: %w", n.name, err)
		}
	}
	return nil
}

// Heal removes the chain from every server, whichever got rules: a server
// restarted since Start has a fresh namespace and nothing to remove.
func (n *netNemesis) Heal(ctx context.Context) error {
	var errs []error
	for _, s := range n.c.Servers {
		if err := removeRules(ctx, s.Container); err != nil {
			errs = append(errs, fmt.Errorf("e2e: heal %s on %s: %w", n.name, s.ID, err))
		}
	}
	return errors.Join(errs...)
}

// dropRules are the chain rules dropping Raft and gossip traffic whose
// source (-s) or destination (-d) is ip; --ports matches either port field.
func dropRules(dir, ip string) [][]string {
	return [][]string{
		{dir, ip, "-p", "tcp", "-m", "multiport", "--ports", faultTCPPorts, "-j", "DROP"},
		{dir, ip, "-p", "udp", "-m", "multiport", "--ports", faultUDPPorts, "-j", "DROP"},
	}
}

// installRules creates the suite's own chain in a container's network
// namespace, jumps to it from INPUT and OUTPUT, and appends rules.
func installRules(ctx context.Context, container string, rules [][]string) error {
	pid, err := containerPID(ctx, container)
	if err != nil {
		return err
	}
	ipt := func(args ...string) error {
		_, err := nsenterNet(ctx, pid, append([]string{"iptables", "-w"}, args...)...)
		return err
	}
	if ipt("-n", "-L", faultChain) != nil {
		if err := ipt("-N", faultChain); err != nil {
			return err
		}
	}
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		if ipt("-C", hook, "-j", faultChain) != nil {
			if err := ipt("-I", hook, "1", "-j", faultChain); err != nil {
				return err
			}
		}
	}
	for _, r := range rules {
		if err := ipt(append([]string{"-A", faultChain}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// removeRules undoes installRules: the jumps, then the chain. A container
// that is not running has no namespace to clean.
func removeRules(ctx context.Context, container string) error {
	pid, err := containerPID(ctx, container)
	if err != nil {
		return nil // not running: its namespace went with it
	}
	ipt := func(args ...string) error {
		_, err := nsenterNet(ctx, pid, append([]string{"iptables", "-w"}, args...)...)
		return err
	}
	if ipt("-n", "-L", faultChain) != nil {
		return nil // never partitioned
	}
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		for ipt("-C", hook, "-j", faultChain) == nil {
			if err := ipt("-D", hook, "-j", faultChain); err != nil {
				return err
			}
		}
	}
	if err := ipt("-F", faultChain); err != nil {
		return err
	}
	return ipt("-X", faultChain)
}

// cutBetween drops all traffic between two groups, both directions.
func cutBetween(a, b []Node) []link {
	var out []link
	for _, x := range a {
		for _, y := range b {
			out = append(out, link{x, y}, link{y, x})
		}
	}
	return out
}

func shuffled(nodes []Node, rng *rand.Rand) []Node {
	out := make([]Node, len(nodes))
	for i, j := range rng.Perm(len(nodes)) {
		out[i] = nodes[j]
	}
	return out
}

// newPartitionHalves splits the servers into a random minority and
// majority.
func newPartitionHalves(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &netNemesis{name: name, c: c, plan: func(context.Context) ([]link, error) {
		s := shuffled(c.Servers, rng)
		return cutBetween(s[:len(s)/2], s[len(s)/2:]), nil
	}}
}

// newIsolateLeader cuts the current leader off from every other server.
func newIsolateLeader(name string, c *Cluster, _ *rand.Rand) Nemesis {
	return &netNemesis{name: name, c: c, plan: func(ctx context.Context) ([]link, error) {
		l, err := c.Leader(ctx)
		if err != nil {
			return nil, err
		}
		return cutBetween([]Node{l}, c.Others(l.ID)), nil
	}}
}

// newOneWay drops traffic from the leader to one follower only: the
// follower stops hearing heartbeats while the leader still hears it (for
// UDP gossip; a TCP connection needs both directions, so Raft's
// connection from the leader fails while the follower's own votes reach
// the leader).
func newOneWay(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &netNemesis{name: name, c: c, plan: func(ctx context.Context) ([]link, error) {
		l, err := c.Leader(ctx)
		if err != nil {
			return nil, err
		}
		others := c.Others(l.ID)
		return []link{{from: l, to: others[rng.IntN(len(others))]}}, nil
	}}
}

// newMajoritiesRing (five servers) connects each server to its two ring
// neighbours only: every server sees a majority (itself and two), and
// each sees a different one, so no majority agrees on who is connected.
func newMajoritiesRing(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &netNemesis{name: name, c: c, plan: func(context.Context) ([]link, error) {
		s := shuffled(c.Servers, rng)
		var out []link
		for i := range s {
			far := s[(i+2)%len(s)]
			out = append(out, link{s[i], far}, link{far, s[i]})
		}
		return out, nil
	}}
}

// newBridge (five servers) splits the servers into two pairs joined only
// through a fifth server that sees both sides.
func newBridge(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &netNemesis{name: name, c: c, plan: func(context.Context) ([]link, error) {
		s := shuffled(c.Servers, rng)
		half := len(s) / 2
		return cutBetween(s[:half], s[half+1:]), nil
	}}
}
