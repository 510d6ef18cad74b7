package check

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amserver/amserver/e2e/workload"
)

// Shorthands for synthetic operations; times are in arbitrary units.
func rd(p int, key string, v int64, call, ret int64) workload.Op {
	return workload.Op{Process: p, Kind: workload.KindRead, Key: key, Value: v, Outcome: workload.OK, Call: call, Return: ret}
}

func wr(p int, key string, v int64, out workload.Outcome, call, ret int64) workload.Op {
	return workload.Op{Process: p, Kind: workload.KindWrite, Key: key, Value: v, Outcome: out, Call: call, Return: ret}
}

func cas(p int, key string, expect, v int64, out workload.Outcome, call, ret int64) workload.Op {
	return workload.Op{Process: p, Kind: workload.KindCAS, Key: key, Value: v, Expect: expect, CAS: 1, Outcome: out, Call: call, Return: ret}
}

func withIDs(ops []workload.Op) []workload.Op {
	for i := range ops {
		ops[i].ID = i
	}
	return ops
}

type linCase struct {
	name string
	ops  []workload.Op
	want bool
}

const k, k2 = "reg-0", "reg-1"

const ok, unk, fail = workload.OK, workload.Unknown, workload.Fail

func readWriteCases() []linCase {
	failedRead := rd(1, k, 99, 20, 30)
	failedRead.Outcome = workload.Fail
	return []linCase{
		{"empty history", nil, true},
		{"read initial zero", []workload.Op{rd(0, k, 0, 0, 10)}, true},
		{"stale read after acknowledged write", []workload.Op{wr(0, k, 1, ok, 0, 10), rd(1, k, 0, 20, 30)}, false},
		{"concurrent read sees the old value", []workload.Op{wr(0, k, 1, ok, 0, 100), rd(1, k, 0, 50, 60)}, true},
		{"concurrent read sees the new value", []workload.Op{wr(0, k, 1, ok, 0, 100), rd(1, k, 1, 50, 60)}, true},
		{"reads flip back to the old value", []workload.Op{
			wr(0, k, 1, ok, 0, 100), rd(1, k, 1, 10, 20), rd(1, k, 0, 30, 40)}, false},
		{"unknown write later seen by a read", []workload.Op{wr(0, k, 5, unk, 0, 10), rd(1, k, 5, 100, 110)}, true},
		{"unknown write never seen", []workload.Op{wr(0, k, 5, unk, 0, 10), rd(1, k, 0, 100, 110)}, true},
		{"unknown write seen, then gone", []workload.Op{
			wr(0, k, 5, unk, 0, 10), rd(1, k, 5, 100, 110), rd(1, k, 0, 120, 130)}, false},
		{"read before an unknown write was called", []workload.Op{rd(1, k, 5, 0, 10), wr(0, k, 5, unk, 20, 30)}, false},
		{"failed write dropped", []workload.Op{wr(0, k, 3, fail, 0, 10), rd(1, k, 0, 20, 30)}, true},
		{"failed write seen by a read", []workload.Op{wr(0, k, 3, fail, 0, 10), rd(1, k, 3, 20, 30)}, false},
		{"failed read ignored", []workload.Op{failedRead}, true},
		{"lost acknowledged write", []workload.Op{
			wr(0, k, 1, ok, 0, 10), wr(0, k, 2, ok, 20, 30), rd(1, k, 1, 40, 50)}, false},
		{"keys are independent", []workload.Op{wr(0, k, 1, ok, 0, 10), rd(1, k2, 0, 20, 30)}, true},
		{"stale read despite unobserved unknown writes", []workload.Op{
			wr(0, k, 1, ok, 0, 10), wr(2, k, 8, unk, 0, 5), rd(1, k, 0, 20, 30)}, false},
		{"value no write wrote", []workload.Op{rd(0, k, -1, 0, 10)}, false},
		{"creates are not register ops", []workload.Op{{Kind: workload.KindCreate, Key: "c-1", Outcome: ok, Call: 0, Return: 5}}, true},
	}
}

func casCases() []linCase {
	return []linCase{
		{"cas chain", []workload.Op{
			rd(0, k, 0, 0, 10), cas(0, k, 0, 7, ok, 20, 30), rd(1, k, 7, 40, 50)}, true},
		{"ok cas with a wrong expectation", []workload.Op{cas(0, k, 3, 4, ok, 0, 10)}, false},
		{"two ok cas from the same value", []workload.Op{
			cas(0, k, 0, 4, ok, 0, 10), cas(1, k, 0, 5, ok, 0, 10), rd(2, k, 5, 20, 30)}, false},
		{"failed cas changes nothing", []workload.Op{cas(0, k, 0, 4, fail, 0, 10), rd(1, k, 0, 20, 30)}, true},
		{"unknown cas applied", []workload.Op{cas(0, k, 0, 4, unk, 0, 10), rd(1, k, 4, 20, 30)}, true},
		// The server's condition is modifyIndex, which placement can bump:
		// an unknown cas whose expectation never holds again is legal.
		{"unknown cas never applicable", []workload.Op{
			wr(0, k, 7, ok, 0, 10), cas(1, k, 5, 9, unk, 20, 30), rd(2, k, 7, 40, 50)}, true},
		{"unknown cas applied without its expectation", []workload.Op{
			wr(0, k, 7, ok, 0, 10), cas(1, k, 5, 9, unk, 20, 30), rd(2, k, 9, 40, 50)}, false},
	}
}

func TestLinearizable(t *testing.T) {
	for _, tc := range append(readWriteCases(), casCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			res, viz := Linearizable(withIDs(tc.ops), 10*time.Second)
			if res.OK != tc.want {
				t.Fatalf("OK = %v, want %v: %+v", res.OK, tc.want, res)
			}
			if tc.want {
				if viz != nil || len(res.Violations) != 0 {
					t.Fatalf("passing check returned visualization or violations: %+v", res)
				}
				return
			}
			if !bytes.Contains(viz, []byte("<html")) {
				t.Fatalf("failing check returned no HTML visualization (%d bytes)", len(viz))
			}
			if len(res.Violations) == 0 || !strings.Contains(res.Violations[0], "not linearizable") {
				t.Fatalf("violations do not say what failed: %q", res.Violations)
			}
		})
	}
}

func TestLinearizableNamesTheFailingKey(t *testing.T) {
	ops := withIDs([]workload.Op{
		wr(0, "reg-0", 1, workload.OK, 0, 10), rd(1, "reg-0", 1, 20, 30),
		wr(0, "reg-1", 2, workload.OK, 0, 10), rd(1, "reg-1", 0, 20, 30),
	})
	res, _ := Linearizable(ops, 10*time.Second)
	if res.OK || len(res.Violations) != 1 || !strings.Contains(res.Violations[0], "key reg-1") ||
		!strings.Contains(res.Violations[0], "op 3") {
		t.Fatalf("want one violation naming reg-1 and op 3, got %+v", res)
	}
	if res.Checked != 4 {
		t.Fatalf("Checked = %d, want 4", res.Checked)
	}
}

// TestUnobservedUnknownsDropped: an unknown write whose value nobody read
// or expected is dropped before porcupine (it can always go last), which
// keeps fault-heavy histories tractable.
func TestUnobservedUnknownsDropped(t *testing.T) {
	ops := withIDs([]workload.Op{
		wr(0, k, 1, ok, 0, 10), rd(1, k, 1, 20, 30), wr(0, k, 2, unk, 40, 50),
		wr(0, k, 3, unk, 60, 70), rd(1, k, 3, 80, 90), cas(2, k, 4, 5, unk, 100, 110),
		{Kind: workload.KindCreate, Key: "c-1", Outcome: ok},
	})
	hist, examined := registerOps(ops)
	if examined != 6 || len(hist) != 4 {
		t.Fatalf("examined %d kept %d, want 6 and 4 (drop unknown writes of 2 and cas to 5)", examined, len(hist))
	}
	for _, op := range hist {
		if in := op.Input.(regInput); in.Outcome == unk && op.Return != 111 {
			t.Fatalf("unknown op returns at %d, want after everything (111)", op.Return)
		}
	}
	// Many doubtful writes between acknowledged ones stay cheap to check.
	var big []workload.Op
	for i := range 3000 {
		t0 := int64(i * 100)
		big = append(big, wr(0, k, int64(3*i+1), ok, t0, t0+10), rd(1, k, int64(3*i+1), t0+20, t0+30),
			wr(2, k, int64(3*i+2), unk, t0+5, t0+40))
	}
	if res, _ := Linearizable(withIDs(big), 5*time.Second); !res.OK || res.Checked != len(big) {
		t.Fatalf("want a quick pass over %d ops, got %+v", len(big), res)
	}
}

// TestLinearizableTimeoutFails: a checker that gives up proves nothing.
func TestLinearizableTimeoutFails(t *testing.T) {
	t.Run("seam", func(t *testing.T) {
		orig := checkOperations
		t.Cleanup(func() { checkOperations = orig })
		checkOperations = func(m porcupine.Model, h []porcupine.Operation, d time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
			_, info := orig(m, h, d)
			return porcupine.Unknown, info
		}
		res, viz := Linearizable(withIDs([]workload.Op{rd(0, "reg-0", 0, 0, 10)}), time.Second)
		assertTimedOut(t, res, viz)
	})
	t.Run("tiny timeout on a large ambiguous history", func(t *testing.T) {
		res, viz := Linearizable(ambiguousHistory(3000), time.Nanosecond)
		assertTimedOut(t, res, viz)
	})
}

func assertTimedOut(t *testing.T, res Result, viz []byte) {
	t.Helper()
	if res.OK {
		t.Fatalf("a timed-out check passed: %+v", res)
	}
	if len(res.Violations) == 0 || !strings.Contains(res.Violations[0], "timed out") {
		t.Fatalf("violation does not say the checker timed out: %q", res.Violations)
	}
	if viz == nil {
		t.Fatal("no visualization for a timed-out check")
	}
}

// ambiguousHistory: many overlapping unknown writes and reads of their
// values on one key; linearizable, but costly to prove.
func ambiguousHistory(n int) []workload.Op {
	var ops []workload.Op
	for i := range n {
		t := int64(i * 10)
		if i%2 == 0 {
			ops = append(ops, wr(i%8, "reg-0", int64(i+1), workload.Unknown, t, t+50))
		} else {
			ops = append(ops, rd(i%8, "reg-0", int64(i), t, t+50))
		}
	}
	return withIDs(ops)
}
