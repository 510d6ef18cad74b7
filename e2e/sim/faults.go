package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// Fault kinds the simulation draws from.
const (
	FaultPartition   = "partition"      // servers split into random halves
	FaultIsolate     = "isolate-leader" // the leader cut off from every server
	FaultOneWay      = "one-way"        // one server's messages to another are lost
	FaultCrash       = "crash"          // a random server killed, restarted from its stores on heal
	FaultCrashLeader = "crash-leader"   // the leader killed, restarted on heal
	FaultPause       = "pause"          // a server frozen: no Raft, no gossip, client requests held
	FaultWorkerKill  = "worker-kill"    // a worker killed, restarted on heal
	FaultRing        = "ring"           // 5 servers: each sees a different majority
	FaultBridge      = "bridge"         // 5 servers: two halves joined by one server
)

// Faults3 and Faults5 are the kinds that make sense for each cluster size.
var (
	Faults3 = []string{FaultPartition, FaultIsolate, FaultOneWay, FaultCrash, FaultCrashLeader, FaultPause, FaultWorkerKill, FaultSqueeze}
	Faults5 = append(append([]string{}, Faults3...), FaultRing, FaultBridge)
)

// healFunc undoes one fault.
type healFunc func(ctx context.Context) error

// inject starts a fault of the given kind and returns what it did and how
// to undo it. Choices are drawn from rng so that a seed names them.
func (c *cluster) inject(ctx context.Context, kind string, rng *rand.Rand) (string, healFunc) {
	n := len(c.servers)
	switch kind {
	case FaultPartition:
		perm := rng.Perm(n)
		minority := perm[:n/2]
		c.setCuts(cutGroups(perm[:n/2], perm[n/2:]))
		return fmt.Sprintf("%s minority=%v", kind, c.names(minority)), c.healLinks
	case FaultIsolate:
		i := c.leaderIndex(rng)
		c.setCuts(cutGroups([]int{i}, others(n, i)))
		return fmt.Sprintf("%s %s", kind, c.servers[i].id), c.healLinks
	case FaultOneWay:
		perm := rng.Perm(n)
		c.setCuts(map[[2]int]bool{{perm[0], perm[1]}: true})
		return fmt.Sprintf("%s %s->%s", kind, c.servers[perm[0]].id, c.servers[perm[1]].id), c.healLinks
	case FaultCrash, FaultCrashLeader:
		i := rng.IntN(n)
		if kind == FaultCrashLeader {
			i = c.leaderIndex(rng)
		}
		s := c.servers[i]
		c.crashServer(s)
		return fmt.Sprintf("%s %s", kind, s.id), func(ctx context.Context) error { return c.startServer(ctx, s) }
	case FaultPause:
		s := c.servers[rng.IntN(n)]
		c.setPaused(s, true)
		return fmt.Sprintf("%s %s", kind, s.id), func(context.Context) error { c.setPaused(s, false); return nil }
	case FaultWorkerKill:
		w := c.workers[rng.IntN(len(c.workers))]
		c.killWorker(w)
		return fmt.Sprintf("%s %s", kind, w.id), func(ctx context.Context) error { return c.startWorker(ctx, w) }
	case FaultSqueeze:
		w := c.busiestWorker(rng)
		return fmt.Sprintf("%s %s", kind, w.id), c.squeeze(ctx, w, rng)
	case FaultRing:
		return kind, c.ring()
	case FaultBridge:
		perm := rng.Perm(n)
		c.setCuts(cutGroups(perm[:2], perm[3:]))
		return fmt.Sprintf("%s via %s", kind, c.servers[perm[2]].id), c.healLinks
	}
	return "none", func(context.Context) error { return nil }
}

func (c *cluster) healLinks(context.Context) error {
	c.setCuts(map[[2]int]bool{})
	return nil
}

// ring cuts every link but those to the two ring neighbours: with five
// servers each one sees a majority of three, and no two see the same one.
func (c *cluster) ring() healFunc {
	n := len(c.servers)
	cuts := map[[2]int]bool{}
	for i := range n {
		for j := range n {
			d := (j - i + n) % n
			if i != j && d != 1 && d != n-1 {
				cuts[[2]int{i, j}] = true
			}
		}
	}
	c.setCuts(cuts)
	return c.healLinks
}

// leaderIndex is the current leader, or a random server when there is none.
func (c *cluster) leaderIndex(rng *rand.Rand) int {
	if l := c.leader(); l != nil {
		for i, s := range c.servers {
			if s == l {
				return i
			}
		}
	}
	return rng.IntN(len(c.servers))
}

func (c *cluster) names(idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = c.servers[i].id
	}
	return out
}

// cutGroups cuts every link between a and b, both ways.
func cutGroups(a, b []int) map[[2]int]bool {
	cuts := map[[2]int]bool{}
	for _, i := range a {
		for _, j := range b {
			cuts[[2]int{i, j}], cuts[[2]int{j, i}] = true, true
		}
	}
	return cuts
}

func others(n, i int) []int {
	var out []int
	for j := range n {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}
