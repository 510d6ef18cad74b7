package main

import (
	"log/slog"
	"testing"
	"time"
)

// TestAgentRolloutSettleFlag: --rollout-settle reaches the server's
// configuration, 5 s when not given.
func TestAgentRolloutSettleFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 5 * time.Second},
		{[]string{"--rollout-settle", "2s"}, 2 * time.Second},
	} {
		f := &agentFlags{}
		cmd := newAgentCmdFor(f)
		args := append([]string{"--server", "--data-dir", t.TempDir(), "--bind", "127.0.0.1"}, tc.args...)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.serverConfig(slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RolloutSettle != tc.want {
			t.Errorf("%v: RolloutSettle %v, want %v", tc.args, cfg.RolloutSettle, tc.want)
		}
	}
}
