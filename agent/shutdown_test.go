package agent_test

import (
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// TestShutdownHandsLeadershipOver: a leader that shuts down hands the
// leadership to another voter first (issue 21). Only s1 may start an
// election by timeout; the others' Raft timeouts are scaled to minutes, so
// a follower that leads within the test was handed the leadership: an
// election after the old leader stopped could not have made it lead yet.
func TestShutdownHandsLeadershipOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	tests := []struct {
		name string
		opts []testcluster.Option
	}{
		{"in memory", nil},
		{"TCP and gossip", []testcluster.Option{testcluster.TCP()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]testcluster.Option{testcluster.Configure(func(i int, cfg *agent.Config) {
				if i > 0 {
					cfg.TimeoutScale = 1000 // 250 s: no election by timeout during the test
				}
			})}, tt.opts...)
			c := testcluster.New(t, 3, opts...)
			old := c.Leader()
			if old.NodeID() != "s1" {
				t.Fatalf("%s leads; only s1 could time out and stand", old.NodeID())
			}
			voters, err := old.Store().Voters()
			if err != nil {
				t.Fatal(err)
			}
			if err := old.Shutdown(ctxTimeout(t, 30*time.Second)); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			next := c.Leader(old)
			if _, ok := voters[next.NodeID()]; !ok || next == old {
				t.Fatalf("%s leads after s1 shut down; want another of the voters %v", next.NodeID(), voters)
			}
		})
	}
}

// TestShutdownHandsLeadershipToALiveVoter: with a follower dead, a leader
// that shuts down hands over to the live one. Raft's own pick ignores
// liveness and took the dead one when both were as up to date, so the
// transfer failed. As above, only s1 may start an election by timeout.
func TestShutdownHandsLeadershipToALiveVoter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	for _, dead := range []string{"s2", "s3"} {
		t.Run(dead+" dead", func(t *testing.T) {
			c := testcluster.New(t, 3, testcluster.TCP(), testcluster.Configure(func(i int, cfg *agent.Config) {
				if i > 0 {
					cfg.TimeoutScale = 1000
				}
			}))
			old := c.Leader()
			if old.NodeID() != "s1" {
				t.Fatalf("%s leads; only s1 could time out and stand", old.NodeID())
			}
			var gone, live *agent.Server
			for _, s := range c.Followers(old) {
				if s.NodeID() == dead {
					gone = s
				} else {
					live = s
				}
			}
			if err := gone.Kill(); err != nil {
				t.Fatal(err)
			}
			poll.Eventually(t, 30*time.Second, "the leader's gossip to see "+dead+" dead", func() error {
				m, ok := old.Gossip().Member(dead)
				return poll.Check(ok && m.Status == gossip.StatusDead, "%s is %q", dead, m.Status)
			})
			if err := old.Shutdown(ctxTimeout(t, 30*time.Second)); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			if next := c.Leader(old, gone); next != live {
				t.Fatalf("%s leads; want %s, the live voter", next.NodeID(), live.NodeID())
			}
		})
	}
}
