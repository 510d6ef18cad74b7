package agent_test

import (
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// TestServerRejoinsWithoutJoin: the first server of a cluster is started
// without --join (README). Stopped with SIGTERM it leaves gossip and Raft;
// started again from its data directory it must find the others by itself,
// or it sits alone and the leader never adds it back.
func TestServerRejoinsWithoutJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	c := testcluster.New(t, 3, testcluster.TCP())
	s1 := c.Servers()[0]
	if len(c.Servers()) != 3 || s1.NodeID() != "s1" {
		t.Fatalf("servers %d, first %s", len(c.Servers()), s1.NodeID())
	}
	poll.Eventually(t, 30*time.Second, "s1 to see the others", func() error {
		n := 0
		for _, m := range s1.Gossip().Members() {
			if m.Status == gossip.StatusAlive {
				n++
			}
		}
		return poll.Check(n == 3, "%d alive", n)
	})
	if err := s1.Shutdown(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	leader := c.Leader(s1)
	gossipSees := func() string {
		for _, m := range c.Leader(s1).Gossip().Members() {
			if m.Name == "s1" {
				return string(m.Status)
			}
		}
		return "absent"
	}
	voter := func() (bool, error) {
		voters, err := c.Leader(s1).Store().Voters()
		_, ok := voters["s1"]
		return ok, err
	}
	// Its leave is usually seen, and the leader removes it; on a loaded
	// host the leave can be lost, and s1 is dead to the others and stays a
	// voter (until --dead-server-cleanup). Either way it is gone from gossip.
	poll.Eventually(t, 30*time.Second, "the leader to see s1 gone", func() error {
		ok, err := voter()
		if err != nil {
			return err
		}
		seen := gossipSees()
		return poll.Check(seen != string(gossip.StatusAlive) && (!ok || seen == string(gossip.StatusDead)),
			"s1 voter %v, the leader's gossip has it %s", ok, seen)
	})
	c.Restart(s1, func(cfg *agent.Config) { cfg.Join = nil })
	poll.Eventually(t, 30*time.Second, "the leader ("+leader.NodeID()+") to have s1 back, alive and a voter", func() error {
		ok, err := voter()
		if err != nil {
			return err
		}
		seen := gossipSees()
		return poll.Check(ok && seen == string(gossip.StatusAlive), "s1 voter %v, the leader's gossip has it %s", ok, seen)
	})
}
