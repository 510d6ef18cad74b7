package leader

import (
	"log/slog"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// TestElasticWarnsShortNode: a provisioned node that registers with less
// than its instance type is logged once (not on every pass), with what it
// lacks; a node that matches its type is not.
func TestElasticWarnsShortNode(t *testing.T) {
	tests := []struct {
		name   string
		shrink func(n *fsm.Node)
		warns  int
	}{
		{"matches its type", func(*fsm.Node) {}, 0},
		{"less capacity", func(n *fsm.Node) { n.TotalCapacity = 1000 }, 1},
		{"fewer cores", func(n *fsm.Node) { n.TotalCores = 0 }, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.pool(planPool("e", 0, 1))
			d := e.elastic()
			d.pass(e.ctx)
			sp := e.spawns()[0]
			node := fsm.Node{ID: sp.NodeID, Pool: sp.Pool, TotalCapacity: sp.InstanceType.TotalCapacity,
				TotalCores: sp.InstanceType.TotalCores}
			tc.shrink(&node)
			e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: node, Now: e.now()})
			e.setStatus(sp.NodeID, fsm.NodeReady)
			for range 3 {
				d.pass(e.ctx)
			}
			if got := e.logs.Count(slog.LevelWarn, msgSpawnShort); got != tc.warns {
				t.Fatalf("%d warnings, want %d", got, tc.warns)
			}
		})
	}
}
