package scheduler

import (
	"testing"

	"github.com/amserver/amserver/fsm"
)

func TestSmokePlaceAndCommit(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i, az := range []string{"a", "a", "b", "b"} {
		cloud := "x"
		if i >= 2 {
			cloud = "y"
		}
		c.node(mkNode(string(rune('1'+i))+"n", "p", az, cloud, 8000, 8))
	}
	spec := fsm.BundleSpec{ID: "b1", Pool: "p", Jobs: []fsm.Job{mkJob("a", 2000, 2), mkJob("b", 2000, 2)},
		Placement:  fsm.Placement{SameAz: fsm.SameAzHard},
		Resilience: &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Forbid, SameCloud: fsm.Forbid}}
	b := c.bundle(spec)
	plan, res := PlaceBatch(c.state(), []*fsm.Bundle{b}, 7, 1)
	if !res[0].PrimaryPlaced || !res[0].BackupPlaced {
		t.Fatalf("not placed: %+v", res[0])
	}
	c.commit(plan)
	checkInvariants(t, c.state())
	got := c.state().Bundle("b1")
	t.Logf("state=%s primary=%v backup=%v deg=%v", got.State, replicaNodes(got, fsm.RolePrimary), replicaNodes(got, fsm.RoleBackup), got.Degradations)
	if got.State != fsm.StatePlaced {
		t.Fatalf("state %s", got.State)
	}
}
