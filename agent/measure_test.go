package agent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// TestMeasureFailover prints failover times over repeated trials; it is a
// measurement, not a check, so it only runs when asked:
//
//	AMSERVER_MEASURE=20 go test -run TestMeasureFailover -v ./agent
func TestMeasureFailover(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("AMSERVER_MEASURE"))
	if trials <= 0 {
		t.Skip("set AMSERVER_MEASURE=<trials> to measure failover times")
	}
	var workerKill, leaderKill []time.Duration
	for i := range trials {
		workerKill = append(workerKill, measureWorkerKill(t))
		leaderKill = append(leaderKill, measureLeaderKill(t))
		t.Logf("trial %d: worker kill → promoted %v, leader kill → acked write %v", i+1, workerKill[i], leaderKill[i])
	}
	fmt.Printf("\n%-36s %8s %8s %8s %8s %s\n", "measurement", "trials", "p50", "p99", "max", "aim")
	printRow("worker kill → backup promoted", workerKill, "p99 < 3s")
	printRow("leader kill → first acknowledged write", leaderKill, "p99 < 2s")
}

func printRow(name string, d []time.Duration, aim string) {
	slices.Sort(d)
	pct := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	fmt.Printf("%-36s %8d %8s %8s %8s %s\n", name, len(d), pct(0.5).Round(time.Millisecond),
		pct(0.99).Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), aim)
}

func measureWorkerKill(t *testing.T) time.Duration {
	tc, workers, c := devCluster(t, 1, 4)
	defer tc.Stop() // each trial on a cluster of its own
	ctx := ctxTimeout(t, 60*time.Second)
	spec := oneJob("m", 1)
	spec.Resilience = &api.Resilience{SameNode: api.Forbid}
	if _, err := c.CreateBundle(ctx, spec); err != nil {
		t.Fatal(err)
	}
	b := bundleIs(t, ctx, c, 30*time.Second, "m", "placed", func(b *api.Bundle) bool { return b.State == api.StatePlaced })
	start := time.Now()
	_ = workerByID(workers, b.Replicas[0].Jobs[0].NodeID).Kill()
	poll.Eventually(t, 30*time.Second, "promoted", func() error {
		nb, _, err := c.Bundle(ctx, "m", &api.QueryOptions{Stale: true})
		if err != nil {
			return err
		}
		return poll.Check(nb.Epoch > b.Epoch, "epoch %d", nb.Epoch)
	})
	return time.Since(start)
}

func measureLeaderKill(t *testing.T) time.Duration {
	tc, _, _ := devCluster(t, 3, 0)
	defer tc.Stop()
	leader := tc.Leader()
	c := tc.Client(tc.Followers(leader)[0])
	start := time.Now()
	_ = leader.Kill()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := c.PutPool(ctx, api.Pool{Name: fmt.Sprintf("p%d", i)})
		cancel()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no write acknowledged 30s after the leader died: %v", err)
		}
		// The loop measures the time to the first acknowledged write: a
		// fine pace, not Eventually's, keeps the measurement precise.
		time.Sleep(10 * time.Millisecond)
	}
}
