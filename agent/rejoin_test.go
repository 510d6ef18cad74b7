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
	isVoter := func(want bool) func() error {
		return func() error {
			voters, err := c.Leader(s1).Store().Voters()
			if err != nil {
				return err
			}
			_, ok := voters["s1"]
			return poll.Check(ok == want, "s1 voter %v, want %v (voters %v)", ok, want, voters)
		}
	}
	poll.Eventually(t, 30*time.Second, "the leader to remove s1, which left", isVoter(false))
	c.Restart(s1, func(cfg *agent.Config) { cfg.Join = nil })
	poll.Eventually(t, 30*time.Second, "the leader ("+leader.NodeID()+") to add s1 back", isVoter(true))
}
