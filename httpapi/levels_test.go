package httpapi

import (
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// TestCommandFieldsWaitForServersLevel: the handlers set the fields of
// fsm.LevelRolloutSettle (SettleRollout, UpsertServiceRequest.Update) only
// when every server applies that level; an older server would ignore them
// and its state would differ from the others'.
func TestCommandFieldsWaitForServersLevel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level int
		want  bool
	}{
		{"every server new", fsm.LevelRolloutSettle, true},
		{"a server of the release before", fsm.LevelRolloutSettle - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := leaderEnv(t)
			seedCluster(t, e.b)
			e.b.set(func(b *testBackend) { b.level = tc.level })

			placeBundle(t, e.b, "b1")
			as, _, err := e.c.Assignments(ctx(t), "n1", nil)
			if err != nil || len(as) != 1 {
				t.Fatalf("assignments = %+v, %v", as, err)
			}
			if err := e.c.ReportStatus(ctx(t), "n1", as[0].ID, api.AssignmentStatus{State: api.JobRunning}); err != nil {
				t.Fatal(err)
			}
			if got := lastBody[fsm.AssignmentStatusRequest](t, e.b).SettleRollout; got != tc.want {
				t.Errorf("status report: SettleRollout %v, want %v", got, tc.want)
			}

			created, err := e.c.CreateBundle(ctx(t), validSpec(""))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.ReplaceBundle(ctx(t), created.Bundle.BundleSpec, 0); err != nil {
				t.Fatal(err)
			}
			if got := lastBody[fsm.ReplaceBundleRequest](t, e.b).SettleRollout; got != tc.want {
				t.Errorf("replace: SettleRollout %v, want %v", got, tc.want)
			}

			svc := api.NodeService{ID: "sidecar", Pools: []string{"p1"}, Launch: api.Launch{Driver: "none", Command: []string{"v1"}}}
			if _, err := e.c.PutService(ctx(t), svc); err != nil {
				t.Fatal(err)
			}
			if got := lastBody[fsm.UpsertServiceRequest](t, e.b).Update; got != tc.want {
				t.Errorf("service put: Update %v, want %v", got, tc.want)
			}
		})
	}
}

// lastBody is the body of the last command the backend applied, which
// must be a T.
func lastBody[T any](t *testing.T, b *testBackend) T {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	body, ok := b.bodies[len(b.bodies)-1].(T)
	if !ok {
		t.Fatalf("last command body %T, want %T", b.bodies[len(b.bodies)-1], body)
	}
	return body
}
