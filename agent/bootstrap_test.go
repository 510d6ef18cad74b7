package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// logTap records the messages logged through it.
type logTap struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logTap) Enabled(context.Context, slog.Level) bool { return true }
func (l *logTap) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logTap) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logTap) WithGroup(string) slog.Handler      { return l }

func (l *logTap) saw(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.msgs, func(m string) bool { return strings.HasPrefix(m, prefix) })
}

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
	tap := &logTap{}
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
	if tap.saw("raft bootstrapped") || !tap.saw("not bootstrapping") {
		t.Fatalf("the replacement bootstrapped a configuration of its own: %v", tap.msgs)
	}
}
