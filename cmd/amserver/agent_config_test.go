package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"
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
		f := &agentFlags{}
		cmd := newAgentCmdFor(f)
		args := append([]string{"--server", "--data-dir", t.TempDir(), "--bind", "127.0.0.1"}, tc.args...)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.serverConfig(slog.New(slog.DiscardHandler))
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
