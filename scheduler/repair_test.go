package scheduler

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// sixNodes is a pool p of n1..n6, two per AZ (a, a, b, b, c, c), one
// cloud, 8 units and 4 cores each.
func sixNodes(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i, az := range []string{"a", "a", "b", "b", "c", "c"} {
		c.node(mkNode(fmt.Sprintf("n%d", i+1), "p", az, "x", 8000, 4))
	}
	return c
}

// pairSpec is a bundle of two jobs that must be apart, optionally with a
// backup kept off the primary's nodes and AZs.
func pairSpec(id string, resilient bool, capacity int64) fsm.BundleSpec {
	b := mkJob("b", 2000, 1)
	b.SeparateFrom = []string{"a"}
	spec := fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{mkJob("a", capacity, 1), b}}
	if resilient {
		spec.Resilience = &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Forbid, SameCloud: fsm.Allow}
	}
	return spec
}

func (c *cluster) status(node, status string) {
	c.t.Helper()
	n := c.state().Node(node)
	c.ok(fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: node, Status: status, AZ: n.AZ(), Cloud: n.Cloud()})
}

func newBatch(c *cluster, seed uint64) *Batch {
	return NewEngine(Options{}).Snapshot(c.state()).NewBatch(seed)
}

// slotJobs maps "slot/job" to the job's placement, for every placed job.
func slotJobs(b *fsm.Bundle) map[string]fsm.JobPlacement {
	out := map[string]fsm.JobPlacement{}
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.Placed() {
				out[fmt.Sprintf("%d/%s", r.Slot, j.Name)] = j
			}
		}
	}
	return out
}

func placedKeys(ps []fsm.Place) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d/%s", p.Slot, p.Job))
	}
	slices.Sort(out)
	return out
}

func releasedKeys(rs []fsm.SlotJob) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d/%s", r.Slot, r.Job))
	}
	slices.Sort(out)
	return out
}

// checkUntouched: every job of before that is not in moved still holds the
// same node and grant in after (by slot, whatever the replica order).
func checkUntouched(t *testing.T, before, after *fsm.Bundle, moved []string) {
	t.Helper()
	now := slotJobs(after)
	for k, j := range slotJobs(before) {
		if slices.Contains(moved, k) {
			continue
		}
		if got, ok := now[k]; !ok || got.NodeID != j.NodeID || !ledger.GrantEqual(got.Grant, j.Grant) {
			t.Fatalf("%s moved or lost: was %s %+v, now %+v", k, j.NodeID, j.Grant, got)
		}
	}
}

// checkNothingOn: no reservation of the bundle is left on the nodes.
func checkNothingOn(t *testing.T, st *fsm.State, bundle string, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		for _, r := range st.NodeReservations(n) {
			if r.Key.Bundle == bundle {
				t.Fatalf("reservation %s left on %s", r.Key, n)
			}
		}
	}
}

type repairCase struct {
	name            string
	spec            fsm.BundleSpec
	primary, backup map[string]string
	filler          map[string]int64 // node → capacity another bundle holds there
	extra           []fsm.Node
	lost            []string
	promote         bool
	moved           []string // "slot/job" the update releases and re-places
	released        []string // when it differs from moved (nothing fits)
	state           string
	check           func(t *testing.T, st *fsm.State, b *fsm.Bundle)
}

var (
	pair = map[string]string{"a": "n1", "b": "n2"}
	back = map[string]string{"a": "n3", "b": "n4"}
)

// TestRepairFailover: the cases where the primary or the backup loses jobs
// while the other replica is healthy.
func TestRepairFailover(t *testing.T) {
	cases := []repairCase{{
		name: "primary lost: backup promoted, only the lost job re-placed against the new primary",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, lost: []string{"n1"},
		promote: true, moved: []string{"0/a"}, state: fsm.StatePlaced,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			if got := replicaNodes(b, fsm.RolePrimary); !reflect.DeepEqual(got, back) {
				t.Fatalf("new primary %v, want the old backup %v", got, back)
			}
			if n := replicaNodes(b, fsm.RoleBackup)["a"]; n != "n5" && n != "n6" {
				t.Fatalf("re-placed a on %s: must avoid the new primary's AZ b and b's node n2", n)
			}
			for _, a := range st.BundleAssignments("r") {
				if a.Desired == fsm.DesiredRun && a.Epoch != 2 {
					t.Fatalf("assignment %s has epoch %d after the failover", a.ID, a.Epoch)
				}
				if a.Desired == fsm.DesiredRun && a.Replica == 1 && a.Role != fsm.RolePrimary {
					t.Fatalf("assignment %s is %s, want primary", a.ID, a.Role)
				}
			}
		},
	}, {
		name: "backup lost: only the backup's lost job moves, no failover",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, lost: []string{"n4"},
		moved: []string{"1/b"}, state: fsm.StatePlaced,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			if n := replicaNodes(b, fsm.RoleBackup)["b"]; n != "n5" && n != "n6" {
				t.Fatalf("backup b on %s: must avoid AZ a (primary) and n3 (a)", n)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRepairCase(t, tc) })
	}
}

// TestRepairInPlace: the cases with no healthy replica to fail over to.
func TestRepairInPlace(t *testing.T) {
	cases := []repairCase{{
		name: "both replicas broken: nothing promoted, primary repaired away from the backup, then backup",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, lost: []string{"n1", "n3"},
		extra: []fsm.Node{mkNode("n7", "p", "b", "x", 8000, 4)},
		moved: []string{"0/a", "1/a"}, state: fsm.StatePlaced,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			prim, back := replicaNodes(b, fsm.RolePrimary), replicaNodes(b, fsm.RoleBackup)
			if (prim["a"] != "n5" && prim["a"] != "n6") || back["a"] != "n7" {
				t.Fatalf("primary %v, backup %v: want primary a in AZ c, backup a on n7", prim, back)
			}
		},
	}, {
		name: "both replicas broken, survivors leave no clean choice: the ladder relaxes sameAz",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, lost: []string{"n1", "n3"},
		moved: []string{"0/a", "1/a"}, state: fsm.StateDegraded,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			if got := codes(b.Degradations); !slices.Equal(got, []string{fsm.DegradeBackupSameAz}) {
				t.Fatalf("degradations %v, want only backupSameAz", got)
			}
		},
	}, {
		name: "no backup: the primary's lost job is re-placed next to its survivor",
		spec: pairSpec("r", false, 2000), primary: pair, lost: []string{"n1"},
		moved: []string{"0/a"}, state: fsm.StatePlaced,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			if n := replicaNodes(b, fsm.RolePrimary)["a"]; n == "n2" || n == "n1" {
				t.Fatalf("a on %s breaks separateFrom or sits on the lost node", n)
			}
		},
	}, {
		name: "primary lost without a complete backup: repaired in place",
		spec: pairSpec("r", true, 2000), primary: pair, lost: []string{"n1"},
		moved: []string{"0/a", "1/a", "1/b"}, released: []string{"0/a"}, state: fsm.StatePlaced,
	}, {
		name: "nothing fits: the lost job is released and the bundle explained",
		spec: pairSpec("r", false, 7000), primary: pair, lost: []string{"n1"},
		filler:   map[string]int64{"n3": 4000, "n4": 4000, "n5": 4000, "n6": 4000},
		released: []string{"0/a"}, state: fsm.StateUnplaceable,
		check: func(t *testing.T, st *fsm.State, b *fsm.Bundle) {
			if b.Explain == nil || b.Explain.Filtered[StageCapacity] == 0 {
				t.Fatalf("want a capacity explanation, got %s", explainString(b.Explain))
			}
		},
	}, {
		name: "a node the bundle does not use: no update",
		spec: pairSpec("r", true, 2000), primary: pair, backup: back, lost: []string{"n5"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRepairCase(t, tc) })
	}
}

func runRepairCase(t *testing.T, tc repairCase) {
	c, lost := repairWorld(t, tc)
	before := c.state().Bundle("r")
	plan, res := repairTwice(t, c, before, lost)
	released := tc.released
	if released == nil {
		released = tc.moved
	}
	if len(released) == 0 {
		if res.Update != nil || len(plan.Parts) != 0 {
			t.Fatalf("want no update, got %+v", res.Update)
		}
		return
	}
	u := res.Update
	if u == nil || u.Promote != tc.promote || !slices.Equal(releasedKeys(u.Release), released) ||
		!slices.Equal(placedKeys(u.Place), sortedOrEmpty(tc.moved)) {
		t.Fatalf("update %+v: want promote %v, release %v, place %v", u, tc.promote, released, tc.moved)
	}
	if !strings.Contains(u.Reason, "node "+tc.lost[0]+" down") {
		t.Fatalf("reason %q does not name the lost node", u.Reason)
	}
	c.commit(plan)
	checkRepaired(t, c.state(), before, tc, released)
}

// repairWorld builds a case's cluster and marks its lost nodes down.
func repairWorld(t *testing.T, tc repairCase) (*cluster, map[string]bool) {
	c := sixNodes(t)
	for _, n := range tc.extra {
		c.node(n)
	}
	for _, node := range slices.Sorted(maps.Keys(tc.filler)) {
		id := "fill-" + node
		c.bundle(fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{mkJob("f", tc.filler[node], 0)}})
		c.placeAt(id, 0, map[string]string{"f": node})
	}
	c.bundle(tc.spec)
	c.placeAt("r", 0, tc.primary)
	if tc.backup != nil {
		c.placeAt("r", 1, tc.backup)
	}
	lost := map[string]bool{}
	for _, n := range tc.lost {
		c.status(n, fsm.NodeDown)
		lost[n] = true
	}
	return c, lost
}

// repairTwice repairs on two fresh batches and insists on the same plan.
func repairTwice(t *testing.T, c *cluster, before *fsm.Bundle, lost map[string]bool) (*fsm.Plan, Result) {
	t.Helper()
	repair := func() (*fsm.Plan, Result) {
		b := newBatch(c, 11)
		res := b.Repair(before, lost)
		return b.Plan(1), res
	}
	plan, res := repair()
	if again, _ := repair(); !reflect.DeepEqual(plan, again) {
		t.Fatalf("same input gave different plans")
	}
	return plan, res
}

// checkRepaired checks the committed state: invariants, nothing left on a
// lost node, survivors untouched, epoch and primary slot, state, and the
// case's own checks.
func checkRepaired(t *testing.T, st *fsm.State, before *fsm.Bundle, tc repairCase, released []string) {
	t.Helper()
	after := st.Bundle("r")
	checkInvariants(t, st)
	checkNothingOn(t, st, "r", tc.lost...)
	checkUntouched(t, before, after, released)
	wantEpoch := before.Epoch
	if tc.promote {
		wantEpoch++
	}
	if after.Epoch != wantEpoch || (after.Replicas[0].Slot != before.Replicas[0].Slot) != tc.promote {
		t.Fatalf("epoch %d (want %d), primary slot %d", after.Epoch, wantEpoch, after.Replicas[0].Slot)
	}
	if after.State != tc.state {
		t.Fatalf("state %s, want %s (degradations %v, explain %s)", after.State, tc.state, codes(after.Degradations), explainString(after.Explain))
	}
	if tc.check != nil {
		tc.check(t, st, after)
	}
}

func sortedOrEmpty(l []string) []string {
	out := append([]string{}, l...)
	slices.Sort(out)
	return out
}

// TestRepairSeesEarlierDecisions: repairs in one batch share its overlay,
// so two bundles that lost jobs never land on the same last free slot.
func TestRepairSeesEarlierDecisions(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	c.node(mkNode("n1", "p", "a", "x", 8000, 0))
	c.node(mkNode("n2", "p", "a", "x", 8000, 0))
	for _, id := range []string{"r1", "r2"} {
		c.bundle(fsm.BundleSpec{ID: id, Pool: "p", Jobs: []fsm.Job{mkJob("a", 4000, 0)}})
		c.placeAt(id, 0, map[string]string{"a": "n1"})
	}
	c.bundle(fsm.BundleSpec{ID: "other", Pool: "p", Jobs: []fsm.Job{mkJob("a", 4000, 0)}})
	c.placeAt("other", 0, map[string]string{"a": "n2"})
	c.status("n1", fsm.NodeLeft)
	batch := newBatch(c, 3)
	lost := map[string]bool{"n1": true}
	r1 := batch.Repair(c.state().Bundle("r1"), lost)
	r2 := batch.Repair(c.state().Bundle("r2"), lost)
	if !r1.PrimaryPlaced || r2.PrimaryPlaced || r2.Explain == nil {
		t.Fatalf("only one fits on n2: r1 %+v, r2 %+v", r1, r2)
	}
	if !strings.Contains(r1.Update.Reason, "node n1 left") {
		t.Fatalf("reason %q", r1.Update.Reason)
	}
	c.commit(batch.Plan(1))
	st := c.state()
	checkInvariants(t, st)
	checkNothingOn(t, st, "r1", "n1")
	checkNothingOn(t, st, "r2", "n1")
	if st.Bundle("r2").State != fsm.StateUnplaceable {
		t.Fatalf("r2 is %s", st.Bundle("r2").State)
	}
}
