package httpapi

import (
	"slices"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// TestPutServiceUpdatesInstances: PUT /v1/services/{id} asks the FSM to
// carry the change to the running instances (UpsertServiceRequest.Update):
// a new command reaches the node's assignment at a new generation.
func TestPutServiceUpdatesInstances(t *testing.T) {
	e := leaderEnv(t)
	seedCluster(t, e.b)
	svc := api.NodeService{ID: "sidecar", Pools: []string{"p1"}, Launch: api.Launch{Driver: "none", Command: []string{"v1"}}}
	if _, err := e.c.PutService(ctx(t), svc); err != nil {
		t.Fatal(err)
	}
	e.b.mustApply(t, fsm.ApplyPlanType, fsm.Plan{Parts: []fsm.PlanPart{{Services: []fsm.ServicePlacement{{ServiceID: "sidecar", Node: "n1"}}}}})
	svc.Launch.Command = []string{"v2"}
	if _, err := e.c.PutService(ctx(t), svc); err != nil {
		t.Fatal(err)
	}
	as, _, err := e.c.Assignments(ctx(t), "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(as, func(a api.Assignment) bool { return a.ID == "svc:sidecar@n1" })
	if i < 0 {
		t.Fatalf("no assignment for the service on n1: %+v", as)
	}
	if a := as[i]; a.Generation != 1 || a.Launch.Job == nil || !slices.Equal(a.Launch.Job.Command, []string{"v2"}) {
		t.Fatalf("the instance keeps its old launch: generation %d, launch %+v", a.Generation, a.Launch.Job)
	}
}
