package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/amserver/amserver/worker"
)

// TestRetainFinishedFlag: --retain-finished reaches the worker's config,
// one hour by default.
func TestRetainFinishedFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, worker.DefaultRetainFinished},
		{[]string{"--retain-finished", "10m"}, 10 * time.Minute},
		{[]string{"--retain-finished", "-1s"}, -time.Second},
	} {
		f := &agentFlags{}
		cmd := newAgentCmdFor(f)
		if err := cmd.ParseFlags(append([]string{"--worker", "--node-id", "w1", "--bind", "127.0.0.1"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.workerConfig(slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RetainFinished != tc.want {
			t.Errorf("%v: RetainFinished %s, want %s", tc.args, cfg.RetainFinished, tc.want)
		}
	}
}
