package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
)

// TestPlanPreempts: a dry run searches for victims as the leader's first
// pass over the new bundle does, so `bundle plan` shows a gold bundle that
// would evict bronze ones as placed, with its victims, instead of
// unplaceable; a bundle that may not preempt stays unplaceable. When the
// bundle is then created, the leader's sequence (Place, then Preempt)
// evicts the same replicas and places it on the same nodes. A replaced
// bundle's old version is released, never its own victim.
func TestPlanPreempts(t *testing.T) {
	tests := []struct {
		name      string
		residents []resident
		spec      resident
		state     string
		victims   []string // "bundle/slot"
	}{{
		name:      "gold evicts the bronze it needs, not the silver",
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{4000}, primary: []string{"n1"}}, {id: "z", priority: "bronze", jobs: []int64{4000}, primary: []string{"n1"}}},
		spec:      resident{id: "new", priority: "gold", jobs: []int64{4000}},
		state:     fsm.StatePlaced, victims: []string{"z/0"},
	}, {
		name:      "a job's gold band preempts too",
		residents: []resident{{id: "z", priority: "bronze", jobs: []int64{8000}, primary: []string{"n1"}}},
		spec:      resident{id: "new", priority: "bronze", jobs: []int64{4000}, jobPriority: []string{"gold"}},
		state:     fsm.StatePlaced, victims: []string{"z/0"},
	}, {
		name:      "bronze never preempts",
		residents: []resident{{id: "z", priority: "bronze", jobs: []int64{8000}, primary: []string{"n1"}}},
		spec:      resident{id: "new", priority: "bronze", jobs: []int64{4000}},
		state:     fsm.StateUnplaceable,
	}, {
		name:      "silver does not evict silver",
		residents: []resident{{id: "s", priority: "silver", jobs: []int64{8000}, primary: []string{"n1"}}},
		spec:      resident{id: "new", priority: "silver", jobs: []int64{4000}},
		state:     fsm.StateUnplaceable,
	}, {
		name: "a replaced bundle is not its own victim",
		residents: []resident{{id: "g", priority: "bronze", jobs: []int64{4000}, primary: []string{"n1"}},
			{id: "z", priority: "bronze", jobs: []int64{4000}, primary: []string{"n1"}}},
		spec:  resident{id: "g", priority: "gold", jobs: []int64{8000}},
		state: fsm.StatePlaced, victims: []string{"z/0"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := preemptWorld(t, preemptCase{nodes: 1, residents: tt.residents})
			dry := NewEngine(Options{}).Plan(c.state(), tt.spec.spec(), 9)
			if dry.Bundle.State != tt.state || !slices.Equal(victimKeys(dry.Victims), tt.victims) {
				t.Fatalf("plan: %s, victims %v; want %s, %v (explain %s)", dry.Bundle.State, victimKeys(dry.Victims),
					tt.state, tt.victims, explainString(dry.Explain))
			}
			if tt.victims == nil {
				if dry.Explain == nil {
					t.Fatal("an unplaceable plan without its explanation")
				}
				return
			}
			if tt.spec.id != "new" {
				return // a replace reaches the placer another way
			}
			c.bundle(tt.spec.spec())
			_, res := preemptOnce(t, c, tt.spec.id)
			if !slices.Equal(victimKeys(res.Victims), tt.victims) {
				t.Fatalf("the leader evicts %v, the plan said %v", victimKeys(res.Victims), tt.victims)
			}
			for _, p := range res.Update.Place {
				if got := dry.Bundle.Replicas[p.Slot].Jobs; !slices.ContainsFunc(got, func(j fsm.JobPlacement) bool {
					return j.Name == p.Job && j.NodeID == p.Node
				}) {
					t.Errorf("the leader places %d/%s on %s, the plan on %+v", p.Slot, p.Job, p.Node, got)
				}
			}
		})
	}
}

func victimKeys(vs []Victim) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s/%d", v.BundleID, v.Slot))
	}
	return out
}
