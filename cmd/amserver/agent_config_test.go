package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/raftstore"
)

// TestAgentRolloutSettleFlag: --rollout-settle reaches the server's
// configuration, 5 s when not given; 0 or less is refused (the leader
// took 5 s for it, silently).
func TestAgentRolloutSettleFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration // 0: refused
	}{
		{nil, 5 * time.Second},
		{[]string{"--rollout-settle", "2s"}, 2 * time.Second},
		{[]string{"--rollout-settle", "0s"}, 0},
		{[]string{"--rollout-settle", "-1s"}, 0},
	} {
		cfg, err := serverConfigFor(t, tc.args...)
		if tc.want == 0 {
			if err == nil || !strings.Contains(err.Error(), "--rollout-settle must be positive") {
				t.Errorf("%v: err %v, want --rollout-settle refused", tc.args, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RolloutSettle != tc.want {
			t.Errorf("%v: RolloutSettle %v, want %v", tc.args, cfg.RolloutSettle, tc.want)
		}
	}
}

// TestAgentRaftLogStoreFlag: --raft-log-store reaches the server's
// configuration, auto when not given; an unknown store is refused.
func TestAgentRaftLogStoreFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want raftstore.LogStore // "": refused
	}{
		{nil, raftstore.LogStoreAuto},
		{[]string{"--raft-log-store", "bolt"}, raftstore.LogStoreBolt},
		{[]string{"--raft-log-store", "wal"}, raftstore.LogStoreWAL},
		{[]string{"--raft-log-store", "rocks"}, ""},
	} {
		cfg, err := serverConfigFor(t, tc.args...)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "--raft-log-store") {
				t.Errorf("%v: err %v, want --raft-log-store refused", tc.args, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RaftLogStore != tc.want {
			t.Errorf("%v: RaftLogStore %q, want %q", tc.args, cfg.RaftLogStore, tc.want)
		}
	}
}

// serverConfigFor is the server configuration `amserver agent --server`
// builds from args.
func serverConfigFor(t *testing.T, args ...string) (agent.Config, error) {
	t.Helper()
	f := &agentFlags{}
	cmd := newAgentCmdFor(f)
	if err := cmd.ParseFlags(append([]string{"--server", "--data-dir", t.TempDir(), "--bind", "127.0.0.1"}, args...)); err != nil {
		t.Fatal(err)
	}
	return f.serverConfig(slog.New(slog.DiscardHandler))
}
