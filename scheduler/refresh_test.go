package scheduler

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// digest renders what placement reads from an index, to compare a refreshed
// index with a fresh build.
func digest(t *testing.T, x *index) string {
	t.Helper()
	type node struct {
		ID, AZ, Cloud string
		Tier          int
		Placeable     bool
		Usage         ledger.Usage
		Inv           ledger.Inventory
		Taints        []string
	}
	type pool struct {
		Nodes []int32
		AZs   []string
		Tiers []any
		Cfg   *fsm.Pool
	}
	var out struct {
		Nodes []node
		Pools map[string]pool
	}
	for i := range x.nodes {
		n := &x.nodes[i]
		if n.node.Usage.Capacity != n.usage.Capacity {
			t.Fatalf("node %s: stale usage", n.node.ID)
		}
		out.Nodes = append(out.Nodes, node{n.node.ID, n.az, n.cloud, n.tier, n.placeable, n.usage, n.inv, n.taints})
	}
	out.Pools = map[string]pool{}
	for _, name := range slices.Sorted(maps.Keys(x.pools)) {
		p := x.pools[name]
		var tiers []any
		for _, b := range p.tiers {
			var domains []any
			for _, d := range b.domains {
				domains = append(domains, []any{d.az, d.cloud, d.nodes})
			}
			tiers = append(tiers, []any{b.all, domains, b.byCap, b.gpu})
		}
		out.Pools[name] = pool{p.nodes, p.azs, tiers, p.cfg}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRefreshIndexEqualsFreshBuild(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p", Tiers: []fsm.Tier{{Name: "t0", Cloud: "x"}, {Name: "t1", Cloud: "y"}}})
	for i := range 8 {
		n := mkNode(fmt.Sprintf("n%d", i), "p", []string{"a", "b"}[i%2], []string{"x", "y"}[i/4], 8000, 4)
		if i%3 == 0 {
			n.Capabilities = []ledger.Capability{{Name: "nic", Count: 2}}
		}
		c.node(n)
	}
	eng := NewEngine(Options{})
	check := func(step string, wantShared bool) {
		t.Helper()
		prev := eng.last
		sn := eng.Snapshot(c.state())
		fresh := buildIndex(c.state(), c.state().Nodes(""))
		if got, want := digest(t, sn.idx), digest(t, fresh); got != want {
			t.Fatalf("%s: refreshed index differs from a fresh build:\n%s\n%s", step, got, want)
		}
		if prev != nil && (sn.idx.nodes[0].act == prev.nodes[0].act) != wantShared {
			t.Fatalf("%s: shared=%v, want %v", step, !wantShared, wantShared)
		}
	}
	check("first", false)
	c.bundle(fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{mkJob("a", 2000, 1)}})
	check("bundle created", true)
	c.placeAt("b", 0, map[string]string{"a": "n0"})
	check("usage changed", true)
	c.ok(fsm.NodeCordonType, &fsm.NodeFlagRequest{NodeID: "n3", On: true})
	check("cordoned", false)
	c.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p", Scoring: fsm.ScoringSpread,
		Tiers: []fsm.Tier{{Name: "t0", Cloud: "x"}, {Name: "t1", Cloud: "y"}}}})
	check("scoring changed", true)
	c.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p", Tiers: []fsm.Tier{{Name: "t0", Cloud: "y"}}}})
	check("tiers changed", false)
	c.node(mkNode("n9", "p", "c", "y", 8000, 4))
	check("node added", false)
	c.ok(fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: "n9", Status: fsm.NodeReady, AZ: "d"})
	check("relabelled", false)
}
