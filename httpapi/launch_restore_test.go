package httpapi

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// TestAssignmentLaunchServedAfterRestore: a worker reads what to run from
// its assignments. The state shares an assignment's launch with its
// bundle's row (fsm.Assignment.Launch), and a restore re-links it: the
// assignments served before and after a snapshot restore are the same,
// launch included.
func TestAssignmentLaunchServedAfterRestore(t *testing.T) {
	b := newTestBackend("s1")
	e := newEnv(t, b)
	b.setLeader(e.hs.URL)
	seedCluster(t, b)
	placeBundle(t, b, "b1")
	before, _, err := e.c.Assignments(t.Context(), "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := fsm.PersistTo(snap, &buf); err != nil {
		t.Fatal(err)
	}
	if err := b.fsm.Restore(io.NopCloser(&buf)); err != nil { // as raft restores a follower
		t.Fatal(err)
	}
	after, _, err := e.c.Assignments(t.Context(), "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := api.Launch{Kind: api.LaunchLegacy, Job: &api.LegacyJob{Driver: fsm.DriverNone}}
	for name, list := range map[string][]api.Assignment{"before": before, "after": after} {
		if len(list) != 1 || !reflect.DeepEqual(list[0].Launch, want) {
			t.Fatalf("%s the restore: served %+v, want one assignment with launch %+v", name, list, want)
		}
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("served %+v after the restore, %+v before", after, before)
	}
}
