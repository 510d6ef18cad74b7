//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeServers is a cluster description without containers, for checking
// partition plans.
func fakeServers(n int) *Cluster {
	c := &Cluster{logf: func(string, ...any) {}}
	for i := 1; i <= n; i++ {
		c.Servers = append(c.Servers, Node{ID: fmt.Sprintf("server-%d", i), IP: fmt.Sprintf("172.28.0.%d", 10+i)})
	}
	return c
}

// reachable lists, for each server, the servers it still exchanges
// traffic with in both directions (itself included), sorted.
func reachable(c *Cluster, links []link) map[string]string {
	cut := map[[2]string]bool{}
	for _, l := range links {
		cut[[2]string{l.from.ID, l.to.ID}] = true
	}
	out := map[string]string{}
	for _, a := range c.Servers {
		var seen []string
		for _, b := range c.Servers {
			if !cut[[2]string{a.ID, b.ID}] && !cut[[2]string{b.ID, a.ID}] {
				seen = append(seen, b.ID)
			}
		}
		slices.Sort(seen)
		out[a.ID] = strings.Join(seen, ",")
	}
	return out
}

// TestPartitionPlans checks the shapes of the planned partitions (no
// Docker needed): sizes of what each server sees, and for the ring that
// every server sees a different majority.
func TestPartitionPlans(t *testing.T) {
	tests := []struct {
		name    string
		servers int
		build   func(string, *Cluster, *rand.Rand) Nemesis
		// sees is the sorted multiset of group sizes each server sees.
		sees     []int
		distinct int // how many different views there are
	}{
		{"partition-halves", 3, newPartitionHalves, []int{1, 2, 2}, 2},
		{"partition-halves", 5, newPartitionHalves, []int{2, 2, 3, 3, 3}, 2},
		{"majorities-ring", 5, newMajoritiesRing, []int{3, 3, 3, 3, 3}, 5},
		{"bridge", 5, newBridge, []int{3, 3, 3, 3, 5}, 3},
	}
	for _, tt := range tests {
		for seed := range uint64(20) {
			c := fakeServers(tt.servers)
			n := tt.build(tt.name, c, rand.New(rand.NewPCG(seed, 0))).(*netNemesis)
			links, err := n.plan(context.Background())
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			views := reachable(c, links)
			var sizes []int
			distinct := map[string]bool{}
			for _, v := range views {
				sizes = append(sizes, len(strings.Split(v, ",")))
				distinct[v] = true
			}
			slices.Sort(sizes)
			if !slices.Equal(sizes, tt.sees) || len(distinct) != tt.distinct {
				t.Errorf("%s/%d seed %d: views %v: sizes %v (want %v), %d distinct (want %d)",
					tt.name, tt.servers, seed, views, sizes, tt.sees, len(distinct), tt.distinct)
			}
		}
	}
}

// TestNemesisHeal is the harness's self-check (no workload): each selected
// nemesis starts, holds, heals, and the cluster must be healthy again.
// Run it by hand: go test -tags e2e -run TestNemesisHeal ./e2e -v
func TestNemesisHeal(t *testing.T) {
	specs, err := selectNemeses(envOr("AMSERVER_E2E_NEMESES", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{3, 5} {
		group := slices.DeleteFunc(slices.Clone(specs), func(s nemesisSpec) bool { return s.servers != size })
		if len(group) == 0 {
			continue
		}
		// A subtest per cluster: its cleanup tears the cluster down before
		// the next one needs the same subnet and ports.
		t.Run(fmt.Sprintf("%dservers", size), func(t *testing.T) {
			c := startCluster(t, size)
			for _, spec := range group {
				t.Run(spec.name, func(t *testing.T) { startHoldHeal(t, c, spec) })
			}
		})
	}
}

func startHoldHeal(t *testing.T, c *Cluster, spec nemesisSpec) {
	defer c.UseLog(t.Logf)()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := spec.build(spec.name, c, rand.New(rand.NewPCG(1, 2)))
	if err := n.Start(ctx); err != nil {
		t.Errorf("start: %v", err)
	}
	time.Sleep(5 * time.Second) // hold: let the fault bite
	logViews(ctx, t, c)
	if err := n.Heal(ctx); err != nil {
		t.Errorf("heal: %v", err)
	}
	if err := c.WaitHealthy(ctx, 90*time.Second); err != nil {
		t.Fatalf("not healthy after heal: %v", err)
	}
}

// logViews prints what each server believes about leadership: during a
// fault it shows whether the fault took effect.
func logViews(ctx context.Context, t *testing.T, c *Cluster) {
	for _, s := range c.Servers {
		h, err := c.Client(s.ID).Health(ctx)
		if err != nil {
			t.Logf("  %s: %v", s.ID, err)
			continue
		}
		t.Logf("  %s: leader=%v knownLeader=%v (%s) peers=%d index=%d", s.ID, h.IsLeader, h.KnownLeader, h.Leader, h.Peers, h.Index)
	}
}

// TestRestartOrder: every server once, the leader last.
func TestRestartOrder(t *testing.T) {
	c := fakeServers(5)
	for _, leader := range []string{"server-1", "server-3", "server-5"} {
		var got []string
		for _, s := range restartOrder(c.Servers, leader) {
			got = append(got, s.ID)
		}
		want := slices.DeleteFunc([]string{"server-1", "server-2", "server-3", "server-4", "server-5"},
			func(id string) bool { return id == leader })
		want = append(want, leader)
		if !slices.Equal(got, want) {
			t.Errorf("leader %s: order %v, want %v", leader, got, want)
		}
	}
}

// TestSmokeSkipsSlowNemeses: the smoke leaves the full-only nemeses out
// unless they are named; the full matrix has them.
func TestSmokeSkipsSlowNemeses(t *testing.T) {
	tests := []struct {
		mode, filter string
		want         bool // rolling-restart selected
	}{
		{"smoke", "", false},
		{"smoke", "rolling-restart", true},
		{"full", "", true},
	}
	for _, tt := range tests {
		t.Setenv("AMSERVER_E2E_MODE", tt.mode)
		t.Setenv("AMSERVER_E2E_NEMESES", tt.filter)
		s, err := loadSettings()
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(s.nemeses, func(n nemesisSpec) bool { return n.name == "rolling-restart" })
		if got != tt.want {
			t.Errorf("mode %s filter %q: rolling-restart selected %v, want %v", tt.mode, tt.filter, got, tt.want)
		}
	}
}
