package fsm

import (
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/ledger"
)

// batchHarness has pool p with node n1 and a placed batch bundle b of the
// given jobs (each on n1).
func batchHarness(t *testing.T, restart *RestartPolicy, jobs ...string) *harness {
	h := newHarness(t)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	h.readyNode(testNode("n1", "p", "a", "x", 8000, 0))
	spec := testBundle("b", "p")
	for _, j := range jobs {
		spec.Jobs = append(spec.Jobs, testJob(j, 1000, 0))
	}
	spec.Kind, spec.Restart = KindBatch, restart
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
	h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{h.placeAll("b", 0, "n1")}})
	return h
}

// report sends a worker's report for the job's current generation.
func (h *harness) report(job, status string, code int, now int64) {
	h.t.Helper()
	id := assignmentID(keyOf("b", 0, job), "n1")
	a := h.fsm.State().Assignment(id)
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: status, ExitCode: code, Now: now,
		Generation: a.Generation})
}

// TestBatchStaleExitIgnored: the exit of a run the job was restarted past
// (a late report of the earlier generation) neither counts an attempt nor
// ends the bundle.
func TestBatchStaleExitIgnored(t *testing.T) {
	h := batchHarness(t, &RestartPolicy{Attempts: 1, Mode: RestartFail}, "a")
	h.report("a", JobExited, 1, 1) // restarted at once: generation 1
	id := assignmentID(keyOf("b", 0, "a"), "n1")
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: id, Status: JobExited, ExitCode: 1, Now: 2})
	b := h.fsm.State().Bundle("b")
	if b.State == StateFailed || b.Replicas[0].Jobs[0].Attempts != 1 || h.fsm.State().Assignment(id).Status != JobAssigned {
		t.Fatalf("a stale exit counted: state %s, job %+v", b.State, b.Replicas[0].Jobs[0])
	}
	h.report("a", JobExited, 1, 3)
	if got := h.fsm.State().Bundle("b").State; got != StateFailed {
		t.Fatalf("the current run's exit: state %s", got)
	}
}

// TestBatchOutcomes: table of exit sequences and the bundle they leave.
func TestBatchOutcomes(t *testing.T) {
	type step struct {
		job    string
		status string
		code   int
	}
	for _, tc := range []struct {
		name     string
		restart  *RestartPolicy
		jobs     []string
		steps    []step
		state    string
		attempts map[string]int
		codes    map[string]int
	}{
		{"every job exits 0", nil, []string{"a", "b"}, []step{{"a", JobRunning, 0}, {"a", JobExited, 0}, {"b", JobExited, 0}},
			StateComplete, map[string]int{"a": 0, "b": 0}, map[string]int{"a": 0, "b": 0}},
		{"one of two done", nil, []string{"a", "b"}, []step{{"a", JobExited, 0}, {"b", JobRunning, 0}},
			StatePlaced, nil, map[string]int{"a": 0}},
		{"no policy fails at once", nil, []string{"a"}, []step{{"a", JobExited, 2}}, StateFailed, nil, map[string]int{"a": 2}},
		{"restart without delay, then 0", &RestartPolicy{Attempts: 2, Mode: RestartFail}, []string{"a"},
			[]step{{"a", JobExited, 1}, {"a", JobExited, 1}, {"a", JobExited, 0}}, StateComplete, map[string]int{"a": 2}, map[string]int{"a": 0}},
		{"attempts exhausted", &RestartPolicy{Attempts: 1, Mode: RestartFail}, []string{"a", "b"},
			[]step{{"a", JobExited, 1}, {"a", JobExited, 7}}, StateFailed, map[string]int{"a": 1}, map[string]int{"a": 7}},
		{"a crash is not an exit", nil, []string{"a"}, []step{{"a", JobFailed, 0}}, StatePlaced, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := batchHarness(t, tc.restart, tc.jobs...)
			for i, s := range tc.steps {
				h.report(s.job, s.status, s.code, int64(i+1))
			}
			st := h.fsm.State()
			b := st.Bundle("b")
			if b.State != tc.state {
				t.Fatalf("state %s, want %s (%+v)", b.State, tc.state, b.Replicas[0].Jobs)
			}
			for _, j := range b.Replicas[0].Jobs {
				if want, ok := tc.attempts[j.Name]; ok && int(j.Attempts) != want {
					t.Fatalf("job %s attempts %d, want %d", j.Name, j.Attempts, want)
				}
				if want, ok := tc.codes[j.Name]; ok && (j.Status != JobExited || int(j.ExitCode) != want) {
					t.Fatalf("job %s status %s code %d, want exited %d", j.Name, j.Status, j.ExitCode, want)
				}
			}
			finished := tc.state == StateComplete || tc.state == StateFailed
			if finished != (len(st.Reservations()) == 0) || finished != (b.FinishTime != 0) {
				t.Fatalf("finished %v, reservations %d, finish time %d", finished, len(st.Reservations()), b.FinishTime)
			}
			for _, a := range st.BundleAssignments("b") {
				if finished && a.Desired != DesiredStop {
					t.Fatalf("assignment %s still desired %s", a.ID, a.Desired)
				}
			}
			// A finished bundle says where every job last ran, for its
			// output; one still running says nothing.
			var ran []string
			for _, j := range tc.jobs {
				ran = append(ran, assignmentID(keyOf("b", 0, j), "n1"))
			}
			if finished != slices.Equal(b.Ran, ran) || !finished && b.Ran != nil {
				t.Fatalf("finished %v: ran %q, want %q", finished, b.Ran, ran)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestBatchTimerChecksClock: a BatchTimer names a restart or an expiry
// before it is due, and nothing happens; at the due time it does.
func TestBatchTimerChecksClock(t *testing.T) {
	h := batchHarness(t, &RestartPolicy{Attempts: 3, Delay: int64(time.Minute), Mode: RestartFail}, "a")
	const why = "main exited 9: out of disk"
	h.ok(AssignmentStatusType, &AssignmentStatusRequest{NodeID: "n1", AssignmentID: assignmentID(keyOf("b", 0, "a"), "n1"),
		Status: JobExited, ExitCode: 9, Now: 100, Message: why})
	ref := []SlotJobRef{{BundleID: "b", Slot: 0, Job: "a"}}
	h.ok(BatchTimerType, &BatchTimerRequest{Now: 100 + int64(time.Minute) - 1, Restart: ref})
	if j := h.fsm.State().Bundle("b").Replicas[0].Jobs[0]; j.Attempts != 0 || j.Message != why {
		t.Fatalf("restarted early, or the exit's message lost: %+v", j)
	}
	h.ok(BatchTimerType, &BatchTimerRequest{Now: 100 + int64(time.Minute), Restart: ref})
	a := h.fsm.State().BundleAssignments("b")[0]
	if j := h.fsm.State().Bundle("b").Replicas[0].Jobs[0]; j.Attempts != 1 || j.Message != "" || a.Generation != 1 || a.Status != JobAssigned {
		t.Fatalf("not restarted: job %+v, assignment %+v", j, a)
	}
	// a bundle that is not finished never expires
	h.ok(BatchTimerType, &BatchTimerRequest{Now: 1 << 62, Expire: []string{"b"}})
	if h.fsm.State().Bundle("b").Deleting {
		t.Fatal("an unfinished bundle expired")
	}
}

// TestBatchSnapshot: the batch fields survive a snapshot and restore.
func TestBatchSnapshot(t *testing.T) {
	h := batchHarness(t, &RestartPolicy{Attempts: 3, Delay: int64(time.Minute), Mode: RestartDelay}, "a", "b")
	h.report("a", JobExited, 9, 100)
	h.report("b", JobExited, 0, 101)
	into := New(Config{})
	restoreInto(t, h.fsm, into)
	if got, want := stateHash(t, into), stateHash(t, h.fsm); got != want {
		t.Fatalf("restored state differs")
	}
	j := into.State().Bundle("b").Replicas[0].Jobs[0]
	if j.RestartAt != 100+int64(time.Minute) || j.ExitCode != 9 {
		t.Fatalf("restored job %+v", j)
	}
}

func keyOf(bundle string, slot int, job string) ledger.Key {
	return ledger.Key{Bundle: bundle, Replica: slot, Job: job}
}

// TestFinishedBatchRunsAgain: a finished batch bundle submitted again runs
// from scratch: placed anew, its outcome and where it last ran forgotten.
func TestFinishedBatchRunsAgain(t *testing.T) {
	h := batchHarness(t, nil, "a")
	h.report("a", JobExited, 0, 1)
	b := h.fsm.State().Bundle("b")
	if b.State != StateComplete || len(b.Ran) != 1 {
		t.Fatalf("finished: state %s, ran %q", b.State, b.Ran)
	}
	h.ok(ReplaceBundleType, &ReplaceBundleRequest{Spec: b.Spec, Now: 2})
	b = h.fsm.State().Bundle("b")
	if b.Outcome != "" || b.Ran != nil || b.Replicas[0].Jobs[0].Placed() {
		t.Fatalf("submitted again: outcome %q, ran %q, job %+v", b.Outcome, b.Ran, b.Replicas[0].Jobs[0])
	}
	checkInvariants(t, h.fsm)
}
