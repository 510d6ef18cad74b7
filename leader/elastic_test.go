package leader

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

// elastic starts the elastic duty's term against the env's fakes.
func (e *env) elastic() *elastic {
	d := &elastic{l: e.l}
	d.begin(e.ctx)
	return d
}

func (e *env) pool(p fsm.Pool) {
	e.t.Helper()
	e.store.ok(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: p})
}

func (e *env) spawns() []*fsm.Spawn { return e.store.State().Spawns("") }

// register has a spawn's node register and turn ready, as its worker and
// the reconciler would.
func (e *env) register(sp *fsm.Spawn) {
	e.t.Helper()
	it := sp.InstanceType
	e.store.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: fsm.Node{
		ID: sp.NodeID, Pool: sp.Pool, TotalCapacity: it.TotalCapacity, TotalCores: it.TotalCores,
	}, Now: e.now()})
	e.setStatus(sp.NodeID, fsm.NodeReady)
}

func spawnIDs(list []*fsm.Spawn) []string {
	var out []string
	for _, sp := range list {
		out = append(out, sp.ID)
	}
	return out
}

// TestElasticProvisionsForDemand: a bundle that fits nowhere gets a spawn
// written to Raft first; the provisioner is called for the replicated
// spawn on the next pass, and its calls stop wanting once the spawn moved
// on or this server is no longer the leader.
func TestElasticProvisionsForDemand(t *testing.T) {
	e := newEnv(t)
	e.pool(planPool("e", 0, 0))
	e.store.unplaceable("b1", "e", 3000, 1)
	d := e.elastic()
	d.pass(e.ctx)
	spawns := e.spawns()
	if len(spawns) != 1 || spawns[0].State != fsm.SpawnSpawning || spawns[0].InstanceType.Name != "medium" {
		t.Fatalf("spawns %+v, want one medium spawning", spawns)
	}
	if creates, _ := e.prov.takeCalls(); len(creates) != 0 {
		t.Fatalf("provisioner called (%v) before the spawn was replicated", creates)
	}
	d.pass(e.ctx)
	if creates, _ := e.prov.takeCalls(); !slices.Equal(creates, spawnIDs(spawns)) {
		t.Fatalf("creates %v, want %v", creates, spawnIDs(spawns))
	}
	if ps := e.store.take(); len(ps) != 1 || ps[0].typ != fsm.UpsertSpawnType {
		t.Fatalf("proposed %v, want the one spawn", typesOf(ps))
	}
	wanted := e.prov.wanted[spawns[0].ID]
	if !wanted() {
		t.Fatal("the create call is not wanted while the spawn is spawning")
	}
	e.store.setLeader(false)
	if wanted() {
		t.Fatal("the create call is still wanted after leadership was lost")
	}
}

// TestElasticSpawnTimeout: a spawn whose node never registers is given
// back at spawnTimeout on the leader's clock, not before; the provisioner
// is asked to delete it, the spawn is forgotten once the delete succeeded,
// and the demand is provisioned again.
func TestElasticSpawnTimeout(t *testing.T) {
	e := newEnv(t)
	e.pool(planPool("e", 0, 0))
	e.store.unplaceable("b1", "e", 3000, 1)
	d := e.elastic()
	d.pass(e.ctx)
	first := e.spawns()[0]
	e.clock.Advance(time.Duration(fsm.DefaultSpawnTimeout) - time.Second)
	d.pass(e.ctx)
	if sp := e.store.State().Spawn(first.ID); sp.State != fsm.SpawnSpawning {
		t.Fatalf("spawn %s before its timeout", sp.State)
	}
	e.clock.Advance(time.Second)
	d.pass(e.ctx)
	if sp := e.store.State().Spawn(first.ID); sp.State != fsm.SpawnDeleting || sp.DeleteReason != fsm.SpawnTimeoutReason {
		t.Fatalf("spawn %s (%q) at its timeout, want deleting for %s", sp.State, sp.DeleteReason, fsm.SpawnTimeoutReason)
	}
	e.prov.takeCalls()
	d.pass(e.ctx)
	if _, deletes := e.prov.takeCalls(); !slices.Equal(deletes, []string{first.ID}) {
		t.Fatalf("deletes %v, want the timed-out spawn", deletes)
	}
	if len(e.spawns()) != 2 {
		t.Fatalf("%d spawns, want the demand provisioned again", len(e.spawns()))
	}
	e.prov.setDeleted(first.ID, e.clock.Now())
	d.pass(e.ctx)
	if e.store.State().Spawn(first.ID) != nil {
		t.Fatal("the given-back spawn is still in the state")
	}
}

// TestElasticIdleAndScaleDown: registered nodes record when they became
// idle; beyond the warm pool, a node idle for idleTimeout on the leader's
// clock is given back, not before, and a busy node is not idle.
func TestElasticIdleAndScaleDown(t *testing.T) {
	e := newEnv(t)
	p := planPool("e", 0, 2)
	e.pool(p)
	d := e.elastic()
	d.pass(e.ctx)
	spawns := e.spawns()
	if len(spawns) != 2 {
		t.Fatalf("%d spawns, want the 2 warm ones", len(spawns))
	}
	for _, sp := range spawns {
		e.register(sp)
	}
	d.pass(e.ctx)
	for _, sp := range e.spawns() {
		if sp.State != fsm.SpawnRegistered || sp.IdleSince != e.now() {
			t.Fatalf("spawn %s idle since %d, want registered and idle since %d", sp.State, sp.IdleSince, e.now())
		}
	}
	busy := e.spawns()[1]
	e.bundle("work", "e", "", 1000)
	e.place("work", 0, busy.NodeID)
	d.pass(e.ctx)
	if sp := e.store.State().Spawn(busy.ID); sp.IdleSince != 0 {
		t.Fatal("a node running a bundle is still idle")
	}
	e.clock.Advance(time.Second)
	deleteAndPurge(e, "work")
	d.pass(e.ctx) // idle again, a second after the other
	p.Warm = 0
	e.pool(p)
	first := e.store.State().Spawn(spawns[0].ID).IdleSince
	e.clock.Advance(time.Duration(first+fsm.DefaultIdleTimeout-e.now()) - time.Second)
	d.pass(e.ctx)
	if got := countSpawns(e, fsm.SpawnDeleting); got != 0 {
		t.Fatalf("%d spawns given back before the idle timeout", got)
	}
	e.clock.Advance(time.Second)
	d.pass(e.ctx)
	if sp := e.store.State().Spawn(spawns[0].ID); sp.State != fsm.SpawnDeleting || countSpawns(e, fsm.SpawnDeleting) != 1 {
		t.Fatalf("want only the longest idle spawn given back, it is %s", sp.State)
	}
	e.clock.Advance(time.Second)
	d.pass(e.ctx)
	if got := countSpawns(e, fsm.SpawnDeleting); got != 2 {
		t.Fatalf("%d spawns given back, want both once each has been idle for the timeout", got)
	}
}

func countSpawns(e *env, state string) int {
	n := 0
	for _, sp := range e.spawns() {
		if sp.State == state {
			n++
		}
	}
	return n
}

// TestElasticFence: after a spawn's outcome is unknown the duty plans
// nothing until the log has it applied, so whether or not the entry
// committed, the demand gets one spawn.
func TestElasticFence(t *testing.T) {
	for _, committed := range []bool{true, false} {
		name := map[bool]string{true: "committed", false: "lost"}[committed]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.pool(planPool("e", 0, 0))
			e.store.unplaceable("b1", "e", 3000, 1)
			d := e.elastic()
			e.store.failNext(raftstore.ErrOutcomeUnknown)
			d.pass(e.ctx)
			if ps := e.store.take(); len(ps) != 1 || !errors.Is(ps[0].err, raftstore.ErrOutcomeUnknown) {
				t.Fatalf("proposed %v, want one spawn with an unknown outcome", typesOf(ps))
			}
			d.pass(e.ctx)
			if ps := e.store.take(); len(ps) != 0 {
				t.Fatalf("planned again while in doubt: %v", typesOf(ps))
			}
			e.store.settle(committed)
			d.pass(e.ctx)
			d.pass(e.ctx)
			if got := len(e.spawns()); got != 1 {
				t.Fatalf("%d spawns for one bundle's demand, want 1", got)
			}
		})
	}
}

// TestElasticGiveBack: a spawn being given back has its provisioner
// delete call made once its node holds nothing; after the call succeeded
// the spawn is forgotten as soon as the node left gossip, or after
// DeleteGrace on the leader's clock if it is still there.
func TestElasticGiveBack(t *testing.T) {
	tests := []struct {
		name   string
		then   func(e *env, node string)
		delete bool // the provisioner is asked to delete
		grace  bool // after the call succeeded, the spawn waits DeleteGrace
	}{
		{"node left gossip", func(e *env, n string) { e.setStatus(n, fsm.NodeDown) }, true, false},
		{"node still there", func(*env, string) {}, true, true},
		{"node still busy", func(e *env, n string) {
			e.bundle("work", "e", "", 1000)
			e.place("work", 0, n)
		}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := planPool("e", 0, 1)
			e.pool(p)
			d := e.elastic()
			d.pass(e.ctx)
			sp := e.spawns()[0]
			e.register(sp)
			tc.then(e, sp.NodeID)
			p.Warm = 0
			e.pool(p)
			cp := *e.store.State().Spawn(sp.ID)
			cp.State, cp.DeleteReason = fsm.SpawnDeleting, "test"
			e.store.ok(fsm.UpsertSpawnType, &fsm.UpsertSpawnRequest{Spawn: cp, Now: e.now()})
			e.prov.takeCalls()
			d.pass(e.ctx)
			if _, deletes := e.prov.takeCalls(); (len(deletes) == 1) != tc.delete {
				t.Fatalf("delete calls %v, want %t", deletes, tc.delete)
			}
			if !tc.delete {
				return
			}
			e.prov.setDeleted(sp.ID, e.clock.Now())
			if tc.grace {
				e.clock.Advance(e.l.cfg.Elastic.DeleteGrace - time.Nanosecond)
				d.pass(e.ctx)
				if e.store.State().Spawn(sp.ID) == nil {
					t.Fatal("spawn forgotten before DeleteGrace while its node is still there")
				}
				e.clock.Advance(time.Nanosecond)
			}
			d.pass(e.ctx)
			if e.store.State().Spawn(sp.ID) != nil || e.store.State().Node(sp.NodeID) != nil {
				t.Fatal("spawn or node still in the state after the delete succeeded")
			}
		})
	}
}

// TestElasticNoExec: servers that may not run commands call no command
// provisioner, and say why the demand gets no node.
func TestElasticNoExec(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Elastic.ProvisionerProblem = noExec })
	e.pool(planPool("e", 0, 1))
	e.store.unplaceable("b1", "e", 3000, 1)
	d := e.elastic()
	d.pass(e.ctx)
	d.pass(e.ctx)
	if creates, deletes := e.prov.takeCalls(); len(creates)+len(deletes) != 0 || len(e.spawns()) != 0 {
		t.Fatalf("creates %v, deletes %v, spawns %d: want nothing", creates, deletes, len(e.spawns()))
	}
	if m := e.get("b1").Explain.NearestMiss; m == nil || m.Stage != fsm.StageProvisioner {
		t.Fatalf("nearest miss %+v, want the provisioner stage", m)
	}
}

// TestElasticScaleDownKeepsMinNodes: nodes being given back do not count
// toward minNodes, so scale-down stops at the floor on later passes too.
func TestElasticScaleDownKeepsMinNodes(t *testing.T) {
	e := newEnv(t)
	p := planPool("e", 0, 3)
	e.pool(p)
	d := e.elastic()
	d.pass(e.ctx)
	for _, sp := range e.spawns() {
		e.register(sp)
	}
	d.pass(e.ctx) // all idle from now
	p.Warm, p.MinNodes = 0, 1
	e.pool(p)
	e.clock.Advance(time.Duration(fsm.DefaultIdleTimeout))
	for range 3 {
		d.pass(e.ctx)
		e.clock.Advance(time.Second)
	}
	if got := countSpawns(e, fsm.SpawnRegistered); got != 1 {
		t.Fatalf("%d nodes left registered, want minNodes (1)", got)
	}
}

// TestElasticProvisionerGivesUp: a create call given up after its retries
// gives its spawn back, rests the pool (no new spawn, the demand explained)
// until provisionerRest passes on the clock, then provisions again; a
// delete call given up forgets the spawn with a reason.
func TestElasticProvisionerGivesUp(t *testing.T) {
	e := newEnv(t)
	e.pool(planPool("e", 0, 0))
	e.store.unplaceable("b1", "e", 3000, 1)
	d := e.elastic()
	d.pass(e.ctx) // writes the spawn
	d.pass(e.ctx) // calls create
	first := e.spawns()[0]
	e.prov.setFailed(opCreate, first.ID, "provisioner POST http://p: 503 Service Unavailable")
	d.pass(e.ctx)
	if sp := e.store.State().Spawn(first.ID); sp == nil || sp.State != fsm.SpawnDeleting || !strings.Contains(sp.DeleteReason, "503") {
		t.Fatalf("after the create gave up: %+v, want deleting with the reason", sp)
	}
	d.pass(e.ctx)
	d.pass(e.ctx)
	if n := len(e.spawns()); n != 1 {
		t.Fatalf("%d spawns while the pool rests, want only the failed one", n)
	}
	if m := e.get("b1").Explain.NearestMiss; m == nil || m.Stage != fsm.StageProvisioner || !strings.Contains(m.Detail, "keep failing") {
		t.Fatalf("nearest miss %+v, want the resting provisioner", m)
	}
	e.prov.setFailed(opDelete, first.ID, "provisioner DELETE http://p/x: 503 Service Unavailable")
	d.pass(e.ctx)
	if e.store.State().Spawn(first.ID) != nil {
		t.Fatal("a spawn whose delete call gave up is still in the state")
	}
	e.clock.Advance(provisionerRest)
	d.pass(e.ctx)
	if sp := e.spawns(); len(sp) != 1 || sp[0].ID == first.ID || sp[0].State != fsm.SpawnSpawning {
		t.Fatalf("after the rest: spawns %+v, want a new one spawning", sp)
	}
}

// TestElasticGivesBackLostNode: a provisioned node that goes down (or
// leaves) and stays so is given back after the pool's spawnTimeout, not
// before, so it stops holding a maxNodes slot; a suspect one is kept.
func TestElasticGivesBackLostNode(t *testing.T) {
	tests := []struct {
		status  string
		givenUp bool
		wantWhy string
	}{
		{fsm.NodeDown, true, "its node has been down for the spawn timeout"},
		{fsm.NodeLeft, true, "its node left and did not come back within the spawn timeout"},
		{fsm.NodeSuspect, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.status, func(t *testing.T) {
			e := newEnv(t)
			e.pool(planPool("e", 1, 1))
			d := e.elastic()
			d.pass(e.ctx)
			sp := e.spawns()[0]
			e.register(sp)
			d.pass(e.ctx)
			e.setStatus(sp.NodeID, tc.status)
			d.pass(e.ctx)
			e.clock.Advance(time.Duration(fsm.DefaultSpawnTimeout) - time.Second)
			d.pass(e.ctx)
			if got := e.store.State().Spawn(sp.ID); got.State != fsm.SpawnRegistered {
				t.Fatalf("spawn %s before the timeout", got.State)
			}
			e.clock.Advance(time.Second)
			d.pass(e.ctx)
			got := e.store.State().Spawn(sp.ID)
			if (got.State == fsm.SpawnDeleting) != tc.givenUp || got.DeleteReason != tc.wantWhy {
				t.Fatalf("spawn %s (%q) at the timeout, want given up %v (%q)", got.State, got.DeleteReason, tc.givenUp, tc.wantWhy)
			}
		})
	}
}
