package worker

import (
	"log/slog"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestWorkerStopsWhatIsNoLongerAssigned: after a partition heals the
// worker's task list may hold work the servers moved elsewhere meanwhile;
// reconcile stops every task the server no longer lists.
func TestWorkerStopsWhatIsNoLongerAssigned(t *testing.T) {
	drv := NewNoneDriver()
	ctx := t.Context()
	drv.Ensure(ctx, api.Assignment{ID: "moved:0:j@w1", Desired: "run"})
	drv.Ensure(ctx, api.Assignment{ID: "kept:0:j@w1", Desired: "run"})
	w := &Worker{cfg: Config{NodeID: "w1", Driver: drv}, logger: slog.New(slog.DiscardHandler)}
	kept := api.Assignment{ID: "kept:0:j@w1", Desired: "run", Status: api.JobRunning}
	if err := w.reconcile(ctx, nil, []api.Assignment{kept}); err != nil {
		t.Fatal(err)
	}
	if got := drv.Running(); len(got) != 1 || got[0] != kept.ID {
		t.Fatalf("running after reconcile: %v, want only %s", got, kept.ID)
	}
}
