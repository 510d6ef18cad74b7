//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Nemesis injects one kind of fault from the host. Start begins a fault
// (choosing its victims at that moment, so a new leader is aimed at after
// a failover); Heal undoes exactly what Start did and is a no-op when
// nothing is active, so the harness may call it again after a run.
type Nemesis interface {
	Name() string
	Start(ctx context.Context) error
	Heal(ctx context.Context) error
}

// nemesisSpec is one entry of the matrix: the cluster size a nemesis
// needs and how to build it for a cluster and a seeded random source.
type nemesisSpec struct {
	name    string
	servers int
	build   func(name string, c *Cluster, rng *rand.Rand) Nemesis
	// fullOnly keeps a slow nemesis (a minute or more per cycle) out of
	// the smoke unless named in AMSERVER_E2E_NEMESES: the smoke is a CI
	// stage with a budget.
	fullOnly bool
}

// allNemeses is the matrix, in the order the smoke runs it. The five-server
// topologies need five servers: with three, every majority is the same
// kind of cut as partition-halves.
var allNemeses = []nemesisSpec{
	{"partition-halves", 3, newPartitionHalves, false},
	{"isolate-leader", 3, newIsolateLeader, false},
	{"one-way", 3, newOneWay, false},
	{"kill-leader", 3, newKillLeader, false},
	{"kill-random", 3, newKillRandom, false},
	{"pause", 3, newPause, false},
	{"worker-kill", 3, newWorkerKill, false},
	{"netem", 3, newNetem, false},
	{"membership", 3, newMembership, false},
	{"add-remove-server", 3, newSwap, true},
	{"rolling-restart", 3, newRolling, true},
	{"majorities-ring", 5, newMajoritiesRing, false},
	{"bridge", 5, newBridge, false},
}

// selectNemeses filters the matrix by a comma-separated list of names
// (empty keeps all) and rejects names that do not exist, so a typo in
// AMSERVER_E2E_NEMESES does not silently run nothing.
func selectNemeses(filter string) ([]nemesisSpec, error) {
	if strings.TrimSpace(filter) == "" {
		return allNemeses, nil
	}
	var out []nemesisSpec
	for name := range strings.SplitSeq(filter, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, s := range allNemeses {
			if s.name == name {
				out, found = append(out, s), true
			}
		}
		if !found && name != "" {
			return nil, fmt.Errorf("e2e: unknown nemesis %q (have %s)", name, nemesisNames())
		}
	}
	return out, nil
}

func nemesisNames() string {
	names := make([]string, len(allNemeses))
	for i, s := range allNemeses {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// procNemesis signals containers: SIGKILL (crash; healed by docker start,
// which keeps the data volume, the address and the node id) or SIGSTOP
// (a stall; healed by SIGCONT, after which a deposed leader wakes up
// believing it still leads — the case stale reads come from).
type procNemesis struct {
	name    string
	c       *Cluster
	signal  string
	pick    func(ctx context.Context) (Node, error)
	victims []Node
}

func (n *procNemesis) Name() string { return n.name }

func (n *procNemesis) Start(ctx context.Context) error {
	v, err := n.pick(ctx)
	if err != nil {
		return err
	}
	if _, err := docker(ctx, "kill", "-s", n.signal, v.Container); err != nil {
		return fmt.Errorf("e2e: %s %s: %w", n.name, v.ID, err)
	}
	n.c.logf("nemesis %s: SIG%s %s", n.name, n.signal, v.ID)
	n.victims = append(n.victims, v)
	return nil
}

func (n *procNemesis) Heal(ctx context.Context) error {
	var errs []error
	for _, v := range n.victims {
		var err error
		if n.signal == "STOP" {
			_, err = docker(ctx, "kill", "-s", "CONT", v.Container)
		} else {
			// Restart policy unless-stopped does not restart a container
			// stopped by docker kill, so this is the only restart.
			_, err = docker(ctx, "start", v.Container)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("e2e: heal %s %s: %w", n.name, v.ID, err))
			continue
		}
		n.c.logf("nemesis %s: healed %s", n.name, v.ID)
	}
	n.victims = nil
	return errors.Join(errs...)
}

func pickLeader(c *Cluster) func(context.Context) (Node, error) {
	return c.Leader
}

func pickRandom(nodes []Node, rng *rand.Rand) func(context.Context) (Node, error) {
	return func(context.Context) (Node, error) { return nodes[rng.IntN(len(nodes))], nil }
}

func newKillLeader(name string, c *Cluster, _ *rand.Rand) Nemesis {
	return &procNemesis{name: name, c: c, signal: "KILL", pick: pickLeader(c)}
}

func newKillRandom(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &procNemesis{name: name, c: c, signal: "KILL", pick: pickRandom(c.Servers, rng)}
}

// newPause stalls the leader: pausing a follower only looks like a slow
// disk, while a paused leader is deposed and later resumes mid-request.
func newPause(name string, c *Cluster, _ *rand.Rand) Nemesis {
	return &procNemesis{name: name, c: c, signal: "STOP", pick: pickLeader(c)}
}

// newWorkerKill crashes a worker: the leader must fail its bundles over to
// their backups without ever over-committing a node (the sampler's
// placement check).
func newWorkerKill(name string, c *Cluster, rng *rand.Rand) Nemesis {
	return &procNemesis{name: name, c: c, signal: "KILL", pick: pickRandom(c.Workers, rng)}
}
