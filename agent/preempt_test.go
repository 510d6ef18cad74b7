package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// TestGoldPreemptsBronze: on a full cluster a gold bundle evicts exactly one
// bronze bundle, and the eviction event names the preemptor.
func TestGoldPreemptsBronze(t *testing.T) {
	_, _, c := devCluster(t, 1, 2)
	ctx := ctxTimeout(t, 60*time.Second)
	for i := range 4 {
		spec := oneJob(fmt.Sprintf("bronze-%d", i), 8)
		spec.Priority = api.PriorityBronze
		if _, err := c.CreateBundle(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, 30*time.Second, "bronze bundles fill the cluster", func() error {
		return statesAre(t, c, api.StatePlaced, "bronze-0", "bronze-1", "bronze-2", "bronze-3")
	})
	gold := oneJob("gold", 8)
	gold.Priority = api.PriorityGold
	if _, err := c.CreateBundle(ctx, gold); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "gold placed by preemption", func() error { return statesAre(t, c, api.StatePlaced, "gold") })
	evicted := 0
	for i := range 4 {
		if s := bundleState(t, c, fmt.Sprintf("bronze-%d", i)); s != api.StatePlaced {
			evicted++
		}
	}
	if evicted != 1 {
		t.Fatalf("want exactly one bronze bundle evicted, got %d", evicted)
	}
	var named bool
	_ = c.Events(ctxTimeout(t, 2*time.Second), 0, func(e api.Event) error {
		named = named || (e.Type == "evicted" && strings.Contains(e.Message, "gold"))
		return nil
	})
	if !named {
		t.Fatal("no eviction event naming the preemptor")
	}
}
