package agent

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/gossip"
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
	servers := startTCPCluster(t, 3)
	for i, s := range servers {
		viewer := servers[(i+1)%len(servers)]
		eventually(t, 20*time.Second, s.cfg.NodeID+" advertises Raft membership", func() bool {
			m, ok := viewer.gossip.Member(s.cfg.NodeID)
			return ok && m.Meta.Tags[raftMemberTag] == "1"
		})
	}
	tap := &logTap{}
	cfg := Config{
		NodeID: "a0", DataDir: filepath.Join(t.TempDir(), "a0"), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		BootstrapExpect: 3, Join: []string{servers[0].gossip.LocalAddr()}, Logger: slog.New(tap),
	}
	cfg.Gossip = gossip.DefaultConfig()
	cfg.Gossip.BindAddr, cfg.Gossip.BindPort = "127.0.0.1", 0
	startServer(t, cfg)
	eventually(t, 30*time.Second, "the leader adds the new server as a voter", func() bool {
		for _, s := range servers {
			if !s.store.IsLeader() {
				continue
			}
			f := s.Raft().GetConfiguration()
			if f.Error() != nil {
				return false
			}
			return slices.ContainsFunc(f.Configuration().Servers, func(srv raft.Server) bool {
				return srv.ID == "a0" && srv.Suffrage == raft.Voter
			})
		}
		return false
	})
	if tap.saw("raft bootstrapped") || !tap.saw("not bootstrapping") {
		t.Fatalf("the replacement bootstrapped a configuration of its own: %v", tap.msgs)
	}
}
