package agent

import (
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// TestServersApply: every server of the Raft configuration, voter or not,
// must be alive in gossip with a level at least the one asked; a server
// gossip does not show alive may come back with an older binary.
func TestServersApply(t *testing.T) {
	newServer := func(status gossip.Status) gossip.Member {
		return gossip.Member{Status: status, Meta: gossip.Meta{Role: gossip.RoleServer, FSMLevel: fsm.CommandLevel}}
	}
	release := gossip.Member{Status: gossip.StatusAlive, Meta: gossip.Meta{Role: gossip.RoleServer}} // no FSMLevel
	config := map[string]string{"s1": "a1", "s2": "a2", "s3": "a3"}
	for _, tc := range []struct {
		name    string
		config  map[string]string // nil: config
		members map[string]gossip.Member
		level   int
		want    bool
	}{
		{"all new", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": newServer(gossip.StatusAlive), "s3": newServer(gossip.StatusAlive)}, fsm.LevelRolloutSettle, true},
		{"one old", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": release, "s3": newServer(gossip.StatusAlive)}, fsm.LevelRolloutSettle, false},
		{"one old, level 1 asked", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": release, "s3": newServer(gossip.StatusAlive)}, 1, true},
		{"one missing from gossip", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s3": newServer(gossip.StatusAlive)}, fsm.LevelRolloutSettle, false},
		{"one dead", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": newServer(gossip.StatusDead), "s3": newServer(gossip.StatusAlive)}, fsm.LevelRolloutSettle, false},
		{"one suspect", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": newServer(gossip.StatusSuspect), "s3": newServer(gossip.StatusAlive)}, fsm.LevelRolloutSettle, false},
		{"one left", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": newServer(gossip.StatusLeft), "s3": newServer(gossip.StatusAlive)}, fsm.LevelRolloutSettle, false},
		{"an old non-voter", map[string]string{"s1": "a1", "nv": "a4"}, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "nv": release}, fsm.LevelRolloutSettle, false},
		{"a worker by a server's name", map[string]string{"s1": "a1"}, map[string]gossip.Member{"s1": {Status: gossip.StatusAlive, Meta: gossip.Meta{Role: gossip.RoleWorker, FSMLevel: fsm.CommandLevel}}}, fsm.LevelRolloutSettle, false},
		{"a level above this binary's", nil, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive), "s2": newServer(gossip.StatusAlive), "s3": newServer(gossip.StatusAlive)}, fsm.CommandLevel + 1, false},
		{"no configuration", map[string]string{}, map[string]gossip.Member{"s1": newServer(gossip.StatusAlive)}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.config
			if cfg == nil {
				cfg = config
			}
			member := func(id string) (gossip.Member, bool) {
				m, ok := tc.members[id]
				m.Name = id
				return m, ok
			}
			if got := serversApply(tc.level, cfg, member); got != tc.want {
				t.Fatalf("serversApply(%d) = %v, want %v", tc.level, got, tc.want)
			}
		})
	}
}
