package fsm

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// TestRolloutRelaunchesUnavailableReplicasFirst: a service's replicas that
// are not running and still on an older generation take the new launch at
// once, without waiting for budget. A version that crashes took down the
// replicas it reached; the fix replaced after it must reach them, or they
// hold maxUnavailable for good and the rollout never moves again. Commands
// without the flag (an older leader's) apply as they did then.
func TestRolloutRelaunchesUnavailableReplicasFirst(t *testing.T) {
	for _, tc := range []struct {
		name       string
		flag       bool
		relaunched int // replicas on the fix's generation right after its replace
	}{
		{"new leader", true, 2},
		{"older leader's command", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
			h.readyNode(testNode("n1", "p", "a", "x", 64000, 0))
			spec := testBundle("s", "p", testJob("web", 1000, 0))
			spec.Kind, spec.Count, spec.MaxUnavailable = KindService, 4, 1
			spec.Jobs[0].Launch = versionLaunch(1)
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			placeUnplaced(h)
			reportRunning(h)
			replace := func(v int) {
				next := h.fsm.State().Bundle("s").Spec
				next.Jobs = []Job{next.Jobs[0]}
				next.Jobs[0].Launch = versionLaunch(v)
				h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: next, Rollout: true, RelaunchUnavailable: tc.flag})
			}
			report := func(slot int, status string) {
				for _, a := range h.fsm.State().BundleAssignments("s") {
					if a.Replica == slot {
						h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: a.ID, Status: status, RelaunchUnavailable: tc.flag})
					}
				}
			}
			replace(2) // a version that crashes: replica 0 takes it
			report(0, JobRunning)
			report(0, JobFailed) // its running report let replica 1 go before it crashed
			report(1, JobRunning)
			report(1, JobFailed)
			if n := relaunchedReplicas(h); n != 2 {
				t.Fatalf("%d replicas on the crashing version, want 2", n)
			}
			replace(3) // the fix
			if n := relaunchedReplicas(h); n != tc.relaunched {
				t.Fatalf("%d replicas took the fix at once, want %d", n, tc.relaunched)
			}
			if !tc.flag {
				return
			}
			for range 4 {
				reportRunning(h)
			}
			st := h.fsm.State()
			b := st.Bundle("s")
			if b.Rolling {
				t.Fatalf("the fix's rollout did not finish: %+v", b.Replicas)
			}
			for _, a := range st.BundleAssignments("s") {
				if a.Generation != b.Generation || a.Launch.Job.Env["V"] != "3" {
					t.Fatalf("assignment %s at generation %d runs %+v, the bundle at %d", a.ID, a.Generation, a.Launch.Job, b.Generation)
				}
			}
			checkInvariants(t, h.fsm)
		})
	}
}

func versionLaunch(v int) Launch {
	return Launch{Kind: "legacy", Job: &LegacyJob{Driver: "none", Env: map[string]string{"V": fmt.Sprint(v)}}}
}

// TestRelaunchUnavailableFlagOnTheWire: the commands that carry the flags
// (RelaunchUnavailable, SettleRollout) are encoded without them as before
// they existed, byte for byte, and decode with them on a server from
// before them.
func TestRelaunchUnavailableFlagOnTheWire(t *testing.T) {
	type replaceBefore struct {
		Spec    BundleSpec
		CAS     uint64
		Now     int64
		Rollout bool `json:",omitempty"`
	}
	type reportBefore struct {
		NodeID, AssignmentID, Status, Message string
		Now                                   int64
		ExitCode                              int    `json:",omitempty"`
		Generation                            uint64 `json:",omitempty"`
	}
	spec := testBundle("x", "p", testJob("web", 1000, 0))
	for _, tc := range []struct {
		name        string
		typ         MessageType
		before      any
		without     any
		with        any
		decodedInto func() any
	}{
		{"replace", ReplaceBundleType, &replaceBefore{Spec: spec, Now: 9, Rollout: true},
			&ReplaceBundleRequest{Spec: spec, Now: 9, Rollout: true},
			&ReplaceBundleRequest{Spec: spec, Now: 9, Rollout: true, RelaunchUnavailable: true, SettleRollout: true},
			func() any { return &replaceBefore{} }},
		{"status report", AssignmentStatusType, &reportBefore{NodeID: "n1", AssignmentID: "a", Status: JobRunning, Now: 9, Generation: 2},
			&AssignmentStatusRequest{NodeID: "n1", AssignmentID: "a", Status: JobRunning, Now: 9, Generation: 2},
			&AssignmentStatusRequest{NodeID: "n1", AssignmentID: "a", Status: JobRunning, Now: 9, Generation: 2, RelaunchUnavailable: true, SettleRollout: true},
			func() any { return &reportBefore{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, err := Encode(tc.typ, tc.before)
			if err != nil {
				t.Fatal(err)
			}
			without, err := Encode(tc.typ, tc.without)
			if err != nil {
				t.Fatal(err)
			}
			if string(without) != string(old) {
				t.Fatal("a command without the flag is encoded differently from before the flag")
			}
			with, err := Encode(tc.typ, tc.with)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.decodedInto()
			if err := codec.NewDecoderBytes(with[1:], msgpackHandle).Decode(got); err != nil {
				t.Fatalf("decoded by an older server: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.before) {
				t.Fatalf("decoded by an older server as %+v, want %+v", got, tc.before)
			}
		})
	}
}
