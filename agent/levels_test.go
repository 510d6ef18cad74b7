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
	server := func(status gossip.Status, level int) gossip.Member {
		return gossip.Member{Status: status, Meta: gossip.Meta{Role: gossip.RoleServer, FSMLevel: level}}
	}
	alive, release := server(gossip.StatusAlive, fsm.CommandLevel), server(gossip.StatusAlive, 0) // 0: no FSMLevel
	three := map[string]string{"s1": "a1", "s2": "a2", "s3": "a3"}
	withS2 := func(m gossip.Member) map[string]gossip.Member {
		return map[string]gossip.Member{"s1": alive, "s2": m, "s3": alive}
	}
	worker := gossip.Member{Status: gossip.StatusAlive, Meta: gossip.Meta{Role: gossip.RoleWorker, FSMLevel: fsm.CommandLevel}}
	for _, tc := range []struct {
		name    string
		config  map[string]string
		members map[string]gossip.Member
		level   int
		want    bool
	}{
		{"all new", three, withS2(alive), fsm.LevelRolloutSettle, true},
		{"one old", three, withS2(release), fsm.LevelRolloutSettle, false},
		{"one old, level 1 asked", three, withS2(release), 1, true},
		{"one missing from gossip", three, map[string]gossip.Member{"s1": alive, "s3": alive}, fsm.LevelRolloutSettle, false},
		{"one dead", three, withS2(server(gossip.StatusDead, fsm.CommandLevel)), fsm.LevelRolloutSettle, false},
		{"one suspect", three, withS2(server(gossip.StatusSuspect, fsm.CommandLevel)), fsm.LevelRolloutSettle, false},
		{"one left", three, withS2(server(gossip.StatusLeft, fsm.CommandLevel)), fsm.LevelRolloutSettle, false},
		{"an old non-voter", map[string]string{"s1": "a1", "nv": "a4"}, map[string]gossip.Member{"s1": alive, "nv": release}, fsm.LevelRolloutSettle, false},
		{"a worker by a server's name", three, withS2(worker), fsm.LevelRolloutSettle, false},
		{"a level above this binary's", three, withS2(alive), fsm.CommandLevel + 1, false},
		{"no configuration", map[string]string{}, withS2(alive), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := func(id string) (gossip.Member, bool) {
				m, ok := tc.members[id]
				m.Name = id
				return m, ok
			}
			if got := serversApply(tc.level, tc.config, member); got != tc.want {
				t.Fatalf("serversApply(%d) = %v, want %v", tc.level, got, tc.want)
			}
		})
	}
}
