package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// resident is a bundle placed before the preemptor arrives.
type resident struct {
	id, priority    string
	jobs            []int64  // capacities of jobs a, b, ...
	jobPriority     []string // each job's own band, when given
	resilience      *fsm.Resilience
	primary, backup []string // node of each job
}

var forbidNode = &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Allow, SameCloud: fsm.Allow}
var allowAll = &fsm.Resilience{SameNode: fsm.Allow, SameAz: fsm.Allow, SameCloud: fsm.Allow}

func (r resident) spec() fsm.BundleSpec {
	s := fsm.BundleSpec{ID: r.id, Pool: "p", Priority: r.priority, Resilience: r.resilience}
	for i, capacity := range r.jobs {
		s.Jobs = append(s.Jobs, mkJob(string(rune('a'+i)), capacity, 0))
		if i < len(r.jobPriority) {
			s.Jobs[i].Priority = r.jobPriority[i]
		}
	}
	return s
}

func jobNodes(nodes []string) map[string]string {
	out := map[string]string{}
	for i, n := range nodes {
		out[string(rune('a'+i))] = n
	}
	return out
}

type preemptCase struct {
	name      string
	nodes     int // n1..nN, 8 units each, one per AZ
	residents []resident
	preemptor resident // its primary, when given, is placed up front
	// constraint keeps the preemptor's jobs on one node.
	constraint string
	victims    []string // "bundle/slot"; nil: no preemption possible
	promoted   []string // victim bundles whose backup takes over
}

func gold(capacity int64) resident {
	return resident{id: "g", priority: "gold", jobs: []int64{capacity}}
}

// TestPreemptVictimOrder: bands, roles and job counts decide who goes.
func TestPreemptVictimOrder(t *testing.T) {
	cases := []preemptCase{{
		name: "gold takes bronze, not silver, when bronze suffices", nodes: 1,
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "z", priority: "bronze", jobs: []int64{4000}, primary: []string{"n1"}}},
		preemptor: gold(4000), victims: []string{"z/0"},
	}, {
		name: "a lower band goes first even with more jobs", nodes: 1,
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "z", priority: "bronze", jobs: []int64{2000, 2000}, primary: []string{"n1", "n1"}}},
		preemptor: gold(4000), victims: []string{"z/0"},
	}, {
		name: "fewest jobs within a band", nodes: 1,
		residents: []resident{{id: "p1", priority: "bronze", jobs: []int64{2000, 2000}, primary: []string{"n1", "n1"}},
			{id: "p2", priority: "bronze", jobs: []int64{4000}, primary: []string{"n1"}}},
		preemptor: gold(4000), victims: []string{"p2/0"},
	}, {
		name: "backups before primaries", nodes: 2,
		residents: []resident{
			{id: "x", priority: "bronze", jobs: []int64{4000}, resilience: forbidNode, primary: []string{"n1"}, backup: []string{"n2"}},
			{id: "y", priority: "bronze", jobs: []int64{4000}, resilience: forbidNode, primary: []string{"n2"}, backup: []string{"n1"}}},
		preemptor: gold(4000), victims: []string{"x/1"},
	}, {
		name: "a silver backup before a bronze primary", nodes: 2,
		residents: []resident{
			{id: "s", priority: "silver", jobs: []int64{4000}, resilience: forbidNode, primary: []string{"n2"}, backup: []string{"n1"}},
			{id: "z", priority: "bronze", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "g0", priority: "gold", jobs: []int64{4000}, primary: []string{"n2"}}},
		preemptor: gold(4000), victims: []string{"s/1"},
	}, {
		name: "never the same or a higher band", nodes: 1,
		residents: []resident{{id: "g0", priority: "gold", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "s", priority: "silver", jobs: []int64{4000}, primary: []string{"n1"}}},
		preemptor: resident{id: "g", priority: "silver", jobs: []int64{4000}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPreemptCase(t, tc) })
	}
}

// TestPreemptJobBands: a bundle preempts and is preempted at its effective
// band, the highest of its own and its jobs'.
func TestPreemptJobBands(t *testing.T) {
	cases := []preemptCase{{
		name: "a gold job shields a bronze bundle", nodes: 1,
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "z", priority: "bronze", jobs: []int64{2000, 2000}, jobPriority: []string{"", "gold"}, primary: []string{"n1", "n1"}}},
		preemptor: gold(4000), victims: []string{"s/0"},
	}, {
		name: "a gold job shields its bundle from every band", nodes: 1,
		residents: []resident{{id: "z", priority: "bronze", jobs: []int64{8000}, jobPriority: []string{"gold"}, primary: []string{"n1"}}},
		preemptor: gold(8000),
	}, {
		name: "a gold job lets a bronze bundle preempt silver", nodes: 1,
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "g0", priority: "gold", jobs: []int64{4000}, primary: []string{"n1"}}},
		preemptor: resident{id: "g", priority: "bronze", jobs: []int64{2000, 2000}, jobPriority: []string{"bronze", "gold"}},
		victims:   []string{"s/0"},
	}, {
		name: "bronze jobs do not lower a silver bundle", nodes: 1,
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{8000}, jobPriority: []string{"bronze"}, primary: []string{"n1"}}},
		preemptor: gold(8000), victims: []string{"s/0"},
	}, {
		name: "bronze jobs in a silver preemptor cannot take silver", nodes: 1,
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{8000}, primary: []string{"n1"}}},
		preemptor: resident{id: "g", priority: "silver", jobs: []int64{8000}, jobPriority: []string{"bronze"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPreemptCase(t, tc) })
	}
}

// TestPreemptReplicaRules: never both replicas of a victim, failover of an
// evicted primary, minimality, and what a backup may evict.
func TestPreemptReplicaRules(t *testing.T) {
	cases := []preemptCase{{
		name: "never both replicas of one bundle: another victim instead", nodes: 2,
		residents: []resident{
			{id: "x", priority: "bronze", jobs: []int64{4000}, resilience: allowAll, primary: []string{"n1"}, backup: []string{"n1"}},
			{id: "z", priority: "bronze", jobs: []int64{8000}, primary: []string{"n2"}}},
		preemptor: gold(8000), victims: []string{"z/0"},
	}, {
		name: "never both replicas of one bundle: nothing else helps", nodes: 1,
		residents: []resident{
			{id: "x", priority: "bronze", jobs: []int64{4000}, resilience: allowAll, primary: []string{"n1"}, backup: []string{"n1"}}},
		preemptor: gold(8000),
	}, {
		name: "an evicted primary fails over to its backup", nodes: 2,
		residents: []resident{
			{id: "x", priority: "bronze", jobs: []int64{8000}, resilience: forbidNode, primary: []string{"n1"}, backup: []string{"n2"}}},
		preemptor: gold(8000), constraint: `node.id == "n1"`, victims: []string{"x/0"}, promoted: []string{"x"},
	}, {
		name: "an evicted primary without a backup leaves its bundle pending", nodes: 1,
		residents: []resident{{id: "z", priority: "bronze", jobs: []int64{8000}, primary: []string{"n1"}}},
		preemptor: gold(8000), victims: []string{"z/0"},
	}, {
		name: "the reverse pass drops a victim the placement does not need", nodes: 2,
		residents: []resident{
			{id: "b1", priority: "bronze", jobs: []int64{2000}, resilience: forbidNode, primary: []string{"n2"}, backup: []string{"n1"}},
			{id: "p1", priority: "bronze", jobs: []int64{6000}, primary: []string{"n1"}},
			{id: "g0", priority: "gold", jobs: []int64{6000}, primary: []string{"n2"}}},
		preemptor: gold(6000), victims: []string{"p1/0"},
	}, {
		name: "a backup preemptor takes a lower-band backup", nodes: 3,
		residents: []resident{
			{id: "y", priority: "bronze", jobs: []int64{8000}, resilience: forbidNode, primary: []string{"n3"}, backup: []string{"n2"}},
			{id: "g0", priority: "gold", jobs: []int64{4000}, primary: []string{"n1"}}},
		preemptor: resident{id: "g", priority: "gold", jobs: []int64{4000}, resilience: forbidNode, primary: []string{"n1"}},
		victims:   []string{"y/1"},
	}, {
		name: "a backup preemptor never takes a primary", nodes: 2,
		residents: []resident{{id: "z", priority: "bronze", jobs: []int64{8000}, primary: []string{"n2"}},
			{id: "g0", priority: "gold", jobs: []int64{4000}, primary: []string{"n1"}}},
		preemptor: resident{id: "g", priority: "gold", jobs: []int64{4000}, resilience: forbidNode, primary: []string{"n1"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPreemptCase(t, tc) })
	}
}

func preemptWorld(t *testing.T, tc preemptCase) *cluster {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for i := 1; i <= tc.nodes; i++ {
		c.node(mkNode(fmt.Sprintf("n%d", i), "p", fmt.Sprintf("az%d", i), "x", 8000, 0))
	}
	for _, r := range append(slices.Clone(tc.residents), tc.preemptor) {
		if r.id == "" {
			continue // no preemptor: a dry run's world
		}
		spec := r.spec()
		if r.id == tc.preemptor.id && tc.constraint != "" {
			spec.Jobs[0].EditRules().Constraints = []string{tc.constraint}
		}
		c.bundle(spec)
		if r.primary != nil {
			c.placeAt(r.id, 0, jobNodes(r.primary))
		}
		if r.backup != nil {
			c.placeAt(r.id, 1, jobNodes(r.backup))
		}
	}
	checkInvariants(t, c.state())
	return c
}

// preemptOnce runs the leader's sequence on a fresh batch: Place, and
// Preempt when the replica it is after stayed unplaced.
func preemptOnce(t *testing.T, c *cluster, id string) (*Batch, Result) {
	t.Helper()
	batch := newBatch(c, 9)
	b := c.state().Bundle(id)
	if r := batch.Place(b); r.PrimaryPlaced && (b.Spec.Resilience == nil || r.BackupPlaced) {
		t.Fatalf("the preemptor fits without preemption: %+v", r)
	}
	return batch, batch.Preempt(b)
}

func runPreemptCase(t *testing.T, tc preemptCase) {
	c := preemptWorld(t, tc)
	batch, res := preemptOnce(t, c, "g")
	again, _ := preemptOnce(t, c, "g")
	if !reflect.DeepEqual(batch.Plan(1), again.Plan(1)) {
		t.Fatalf("same input gave different plans")
	}
	var got []string
	for _, v := range res.Victims {
		got = append(got, fmt.Sprintf("%s/%d", v.BundleID, v.Slot))
	}
	if !slices.Equal(got, tc.victims) {
		t.Fatalf("victims %v, want %v (explain %s / %s)", got, tc.victims, explainString(res.Explain), explainString(res.BackupExplain))
	}
	if tc.victims == nil {
		if res.Update != nil || (res.Explain == nil && res.BackupExplain == nil) {
			t.Fatalf("want no update and an explanation, got %+v", res)
		}
		return
	}
	plan := batch.Plan(1)
	part := plan.Parts[len(plan.Parts)-1]
	checkPreemptPart(t, c.state(), part, tc)
	c.commit(plan)
	st := c.state()
	checkInvariants(t, st)
	if g := st.Bundle("g"); !g.Replicas[0].Complete() || (g.Spec.Resilience != nil && tc.preemptor.primary != nil && !g.Replicas[1].Complete()) {
		t.Fatalf("preemptor not placed: %+v", g.Replicas)
	}
	checkVictimsAfter(t, st, res.Victims, tc.promoted)
}

// checkPreemptPart: one update per victim releasing its whole replica and
// naming the preemptor, then the preemptor's own (evictions must apply
// first for its placements to fit),
// each bundle once, every victim in a strictly lower band.
func checkPreemptPart(t *testing.T, st *fsm.State, part fsm.PlanPart, tc preemptCase) {
	t.Helper()
	last := len(part.Updates) - 1
	if last != len(tc.victims) || part.Updates[last].BundleID != "g" || part.Updates[last].Preemptor != "" {
		t.Fatalf("part %+v", part)
	}
	seen := map[string]bool{}
	for i, u := range part.Updates[:last] {
		vb := st.Bundle(u.BundleID)
		slot := 0
		if _, err := fmt.Sscanf(tc.victims[i][strings.IndexByte(tc.victims[i], '/')+1:], "%d", &slot); err != nil {
			t.Fatalf("bad victim %q in the table: %v", tc.victims[i], err)
		}
		want := []string{}
		for _, r := range vb.Replicas {
			for _, j := range r.Jobs {
				if r.Slot == slot && j.Placed() {
					want = append(want, fmt.Sprintf("%d/%s", slot, j.Name))
				}
			}
		}
		if u.Preemptor != "g" || seen[u.BundleID] || !slices.Equal(releasedKeys(u.Release), want) ||
			vb.Spec.EffectiveBand() <= st.Bundle("g").Spec.EffectiveBand() || u.Promote != slices.Contains(tc.promoted, u.BundleID) {
			t.Fatalf("victim update %+v (release want %v, promote want %v)", u, want, slices.Contains(tc.promoted, u.BundleID))
		}
		seen[u.BundleID] = true
	}
}

// checkVictimsAfter: a promoted victim runs on its former backup with a new
// epoch and noBackup; one that lost its backup is degraded with noBackup;
// one that lost its only primary is pending. Every eviction has an event
// naming the preemptor.
func checkVictimsAfter(t *testing.T, st *fsm.State, victims []Victim, promoted []string) {
	t.Helper()
	events := st.Events(0, 10_000)
	for _, v := range victims {
		b := st.Bundle(v.BundleID)
		switch {
		case slices.Contains(promoted, v.BundleID):
			if b.Epoch != 2 || b.Replicas[0].Slot == v.Slot || !b.Replicas[0].Complete() || !b.HasDegradation(fsm.DegradeNoBackup) {
				t.Fatalf("%s: epoch %d, replicas %+v, degradations %v", v.BundleID, b.Epoch, b.Replicas, codes(b.Degradations))
			}
		case !v.Primary:
			if b.State != fsm.StateDegraded || !b.HasDegradation(fsm.DegradeNoBackup) || !b.Replicas[0].Complete() {
				t.Fatalf("%s: state %s, degradations %v", v.BundleID, b.State, codes(b.Degradations))
			}
		default:
			if b.State != fsm.StatePending || len(b.Held()) != 0 {
				t.Fatalf("%s: state %s, held %v", v.BundleID, b.State, b.Held())
			}
		}
		if !slices.ContainsFunc(events, func(e fsm.Event) bool {
			return e.Type == "evicted" && e.BundleID == v.BundleID && strings.Contains(e.Message, "by g")
		}) {
			t.Fatalf("no eviction event for %s", v.BundleID)
		}
	}
}

// TestPreemptEvictionsAreSeenByTheBatch: two preemptors in one batch take
// different victims, and the second never evicts the first's victim's other
// replica.
func TestPreemptEvictionsAreSeenByTheBatch(t *testing.T) {
	c := preemptWorld(t, preemptCase{nodes: 2, residents: []resident{
		{id: "x", priority: "bronze", jobs: []int64{8000}, resilience: forbidNode, primary: []string{"n1"}, backup: []string{"n2"}},
	}, preemptor: resident{id: "g", priority: "gold", jobs: []int64{8000}}})
	c.bundle(resident{id: "h", priority: "gold", jobs: []int64{8000}}.spec())
	batch := newBatch(c, 1)
	first := batch.Preempt(c.state().Bundle("g"))
	second := batch.Preempt(c.state().Bundle("h"))
	if len(first.Victims) != 1 || first.Victims[0].Slot != 1 || len(second.Victims) != 0 || second.Update != nil {
		t.Fatalf("first %+v, second %+v: x may lose one replica only", first.Victims, second.Victims)
	}
	if !batch.Updated("x") {
		t.Fatalf("the batch does not record the eviction")
	}
	c.commit(batch.Plan(1))
	checkInvariants(t, c.state())
	if x := c.state().Bundle("x"); !x.Replicas[0].Complete() {
		t.Fatalf("x lost its primary: %+v", x.Replicas)
	}
}
