package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
)

// TestFailoverSweep measures failover under other gossip settings, the
// evidence behind gossip.DefaultConfig. It only runs when asked:
//
//	AMBENCH_FAILOVER_SWEEP="500ms/200ms/3 250ms/100ms/4" AMBENCH_FAILOVER_TRIALS=20 \
//	    go test -run TestFailoverSweep -v -timeout 2h .
//
// Each entry is probeInterval/probeTimeout/suspicionMult[/suspicionMaxMult],
// or "default" for gossip.DefaultConfig.
func TestFailoverSweep(t *testing.T) {
	sweep := strings.Fields(os.Getenv("AMBENCH_FAILOVER_SWEEP"))
	if len(sweep) == 0 {
		t.Skip("set AMBENCH_FAILOVER_SWEEP to sweep gossip settings")
	}
	trials, _ := strconv.Atoi(os.Getenv("AMBENCH_FAILOVER_TRIALS"))
	for _, entry := range sweep {
		gc, err := parseGossipTiming(entry)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
		rs, err := MeasureFailover(t.Context(), o, FailoverPlan{Trials: trials, Gossip: &gc})
		t.Logf("gossip %s:", entry)
		var b strings.Builder
		PrintTable(&b, rs)
		t.Log("\n" + b.String())
		if err != nil {
			t.Fatal(err)
		}
	}
}

func parseGossipTiming(s string) (gossip.Config, error) {
	gc := gossip.DefaultConfig()
	if s == "default" {
		return gc, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) < 3 || len(parts) > 4 {
		return gc, fmt.Errorf("gossip timing %q: want probeInterval/probeTimeout/suspicionMult[/suspicionMaxMult]", s)
	}
	var errs [4]error
	gc.ProbeInterval, errs[0] = time.ParseDuration(parts[0])
	gc.ProbeTimeout, errs[1] = time.ParseDuration(parts[1])
	gc.SuspicionMult, errs[2] = strconv.Atoi(parts[2])
	if len(parts) == 4 {
		gc.SuspicionMaxMult, errs[3] = strconv.Atoi(parts[3])
	}
	if err := errors.Join(errs[:]...); err != nil {
		return gc, fmt.Errorf("gossip timing %q: %w", s, err)
	}
	return gc, nil
}

// TestFailoverSoak counts false alarms: it keeps an idle cluster up under
// whatever load the machine has and reports every node the leader saw turn
// suspect or down, though none failed. It only runs when asked:
//
//	AMBENCH_FAILOVER_SOAK=250ms/100ms/5 AMBENCH_FAILOVER_SOAK_FOR=5m \
//	    go test -run TestFailoverSoak -v -timeout 1h .
func TestFailoverSoak(t *testing.T) {
	entry := os.Getenv("AMBENCH_FAILOVER_SOAK")
	if entry == "" {
		t.Skip("set AMBENCH_FAILOVER_SOAK to count false alarms under load")
	}
	gc, err := parseGossipTiming(entry)
	if err != nil {
		t.Fatal(err)
	}
	soak, err := time.ParseDuration(os.Getenv("AMBENCH_FAILOVER_SOAK_FOR"))
	if err != nil {
		soak = time.Minute
	}
	topo := foTopology{servers: 3, workers: 4, gossip: gc}
	c, err := startFoCluster(t.Context(), t.TempDir(), topo, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.kill() }()
	leader, err := c.ready(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	alarms, err := foCountAlarms(t.Context(), leader, soak)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gossip %s: %d false alarms in %s (3 servers + 4 workers): %v", entry, len(alarms), soak, alarms)
}

// foCountAlarms follows the leader's event log for d and returns the node
// status changes to suspect or down.
func foCountAlarms(ctx context.Context, leader *agent.Server, d time.Duration) ([]string, error) {
	cl, err := api.New(leader.HTTPAddr())
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	_, meta, err := cl.Nodes(ctx, api.NodeFilter{}, nil)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var alarms []string
	err = cl.Events(ctx, meta.Index, func(ev api.Event) error {
		if ev.Type == "nodeStatus" && (strings.Contains(ev.Message, " is suspect") || strings.Contains(ev.Message, " is down")) {
			alarms = append(alarms, ev.Time.Format(time.TimeOnly)+" "+ev.Message)
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return alarms, fmt.Errorf("follow events: %w", err)
	}
	return alarms, nil
}
