package agent_test

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/logrec"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// TestReplacementServerDoesNotBootstrap: a fresh server started with
// --bootstrap-expect next to a running cluster (a replacement whose id
// sorts first, so it would be among the servers it picks) sees the
// members' raft tag, bootstraps nothing of its own, and is added by the
// leader as a voter.
func TestReplacementServerDoesNotBootstrap(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.TCP())
	servers := c.Servers()
	for i, s := range servers {
		viewer := servers[(i+1)%len(servers)]
		poll.Eventually(t, 20*time.Second, s.NodeID()+" advertises Raft membership", func() error {
			m, ok := viewer.Gossip().Member(s.NodeID())
			// "raft" is the tag of a server that belongs to a Raft cluster.
			return poll.Check(ok && m.Meta.Tags["raft"] == "1", "%s sees %s with tags %v (known %v)", viewer.NodeID(), s.NodeID(), m.Meta.Tags, ok)
		})
	}
	tap := &logrec.Recorder{}
	c.AddServer(func(cfg *agent.Config) {
		cfg.NodeID, cfg.Logger, cfg.Join = "a0", slog.New(tap), []string{servers[0].Gossip().LocalAddr()}
	})
	poll.Eventually(t, 30*time.Second, "the leader adds the new server as a voter", func() error {
		for _, s := range servers {
			if !s.Store().IsLeader() {
				continue
			}
			f := s.Raft().GetConfiguration()
			if err := f.Error(); err != nil {
				return err
			}
			cfg := f.Configuration().Servers
			return poll.Check(slices.ContainsFunc(cfg, func(srv raft.Server) bool {
				return srv.ID == "a0" && srv.Suffrage == raft.Voter
			}), "the leader's configuration is %+v", cfg)
		}
		return errors.New("no leader among s1..s3")
	})
	if tap.Saw("raft bootstrapped") || !tap.Saw("not bootstrapping") {
		t.Fatalf("the replacement bootstrapped a configuration of its own: %v", tap.Messages())
	}
}

// TestWipedServerRejoinsWithoutBootstrapping: a server whose data
// directory was wiped, restarted with its original flags (the same
// addresses) next to its running peers, must not bootstrap a configuration
// of its own (a second bootstrap of a live membership is a split-brain
// door); the leader takes it back and it catches up.
func TestWipedServerRejoinsWithoutBootstrapping(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.TCP())
	leader := c.Leader()
	if _, err := c.Client(leader).PutPool(t.Context(), api.Pool{Name: "before-wipe"}); err != nil {
		t.Fatal(err)
	}
	victim := c.Followers(leader)[0]
	httpAddr, raftAddr := victim.HTTPAddr(), victim.Store().LocalAddr()
	gossipHost, gossipPort, err := net.SplitHostPort(victim.Gossip().LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(gossipPort)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	tap := &logrec.Recorder{}
	reborn := c.Restart(victim, func(cfg *agent.Config) {
		if err := os.RemoveAll(cfg.DataDir); err != nil {
			t.Fatal(err)
		}
		cfg.HTTPAddr, cfg.RaftAddr = httpAddr, raftAddr
		cfg.Gossip.BindAddr, cfg.Gossip.BindPort = gossipHost, port
		cfg.Join, cfg.Logger = []string{leader.Gossip().LocalAddr()}, slog.New(tap)
	})
	poll.Eventually(t, 30*time.Second, "the wiped server back in the configuration, caught up", func() error {
		l := c.Leader()
		f := l.Raft().GetConfiguration()
		if err := f.Error(); err != nil {
			return err
		}
		back := slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool {
			return string(s.ID) == reborn.NodeID() && string(s.Address) == reborn.Store().LocalAddr()
		})
		return poll.Check(back && reborn.FSM().State().Pool("before-wipe") != nil,
			"in the configuration %v, caught up %v", back, reborn.FSM().State().Pool("before-wipe") != nil)
	})
	if tap.Saw("raft bootstrapped") {
		t.Fatalf("the wiped server bootstrapped Raft again: %s", strings.Join(tap.Messages(), "; "))
	}
}
