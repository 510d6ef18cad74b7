package check

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

func create(id string, out workload.Outcome) workload.Op {
	op := workload.Op{Kind: workload.KindCreate, Key: id, Outcome: out}
	if out == workload.Fail {
		op.Code = api.CodeNoLeader
	}
	return op
}

func bundles(ids ...string) []api.Bundle {
	out := make([]api.Bundle, len(ids))
	for i, id := range ids {
		out[i] = api.Bundle{BundleSpec: api.BundleSpec{ID: id}}
	}
	return out
}

func TestUniqueCreates(t *testing.T) {
	ok, unk, fail := workload.OK, workload.Unknown, workload.Fail
	base := []workload.Op{create("c-1", ok), create("c-2", fail), create("c-3", unk), create("c-4", unk)}
	tests := []struct {
		name  string
		ops   []workload.Op
		final []api.Bundle
		want  string // "" passes; otherwise a violation contains it
	}{
		{"all consistent", base, bundles("reg-0", "c-1", "c-3"), ""},
		{"acknowledged create missing", base, bundles("c-3"), "c-1"},
		{"duplicate id", base, bundles("c-1", "c-1"), "appears 2 times"},
		{"failed create present", base, bundles("c-1", "c-2"), "failed definitely"},
		{"phantom bundle", base, bundles("c-1", "c-9"), "phantom bundle c-9"},
		{"retried create: one ack suffices", []workload.Op{create("c-5", unk), create("c-5", ok)}, bundles("c-5"), ""},
		{"retried create: fail then unknown may exist", []workload.Op{create("c-6", fail), create("c-6", unk)}, bundles("c-6"), ""},
		{"non-workload bundles are not phantoms", nil, bundles("reg-0", "other"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := UniqueCreates(withIDs(tc.ops), tc.final)
			if res.Checked != len(tc.ops) {
				t.Errorf("Checked = %d, want %d", res.Checked, len(tc.ops))
			}
			assertResult(t, res, tc.want)
		})
	}
}

func TestMonotonicIndex(t *testing.T) {
	read := func(p int, index uint64, call int64, out workload.Outcome) workload.Op {
		return workload.Op{Process: p, Kind: workload.KindRead, Key: "reg-0", Outcome: out, Index: index, Call: call, Return: call + 5}
	}
	ok, fail := workload.OK, workload.Fail
	tests := []struct {
		name string
		ops  []workload.Op
		want string
	}{
		{"increasing", []workload.Op{read(0, 5, 0, ok), read(0, 5, 10, ok), read(0, 9, 20, ok)}, ""},
		{"decreasing", []workload.Op{read(0, 9, 0, ok), read(0, 5, 10, ok)}, "index 5 after"},
		{"decreasing, given out of order", []workload.Op{read(0, 5, 10, ok), read(0, 9, 0, ok)}, "index 5 after"},
		{"other processes are independent", []workload.Op{read(0, 9, 0, ok), read(1, 5, 10, ok)}, ""},
		{"failed reads ignored", []workload.Op{read(0, 9, 0, ok), read(0, 0, 10, fail), read(0, 9, 20, ok)}, ""},
		{"writes ignored", []workload.Op{read(0, 9, 0, ok), {Process: 0, Kind: workload.KindWrite, Outcome: ok, Index: 2, Call: 10}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertResult(t, MonotonicIndex(withIDs(tc.ops)), tc.want)
		})
	}
}

// assertResult checks a result passes (want "") or fails with a violation
// containing want.
func assertResult(t *testing.T, res Result, want string) {
	t.Helper()
	if want == "" {
		if !res.OK || len(res.Violations) > 0 {
			t.Fatalf("want pass, got %+v", res)
		}
		return
	}
	if res.OK {
		t.Fatalf("want failure mentioning %q, got pass", want)
	}
	for _, v := range res.Violations {
		if strings.Contains(v, want) {
			return
		}
	}
	t.Fatalf("no violation mentions %q: %q", want, res.Violations)
}

func TestViolationsAreCapped(t *testing.T) {
	var final []api.Bundle
	for i := range 50 {
		final = append(final, bundles("c-x"+string(rune('a'+i%26))+string(rune('a'+i/26)))...)
	}
	res := UniqueCreates(nil, final)
	if res.OK || res.Count != 50 || len(res.Violations) != MaxViolations+1 ||
		!strings.Contains(res.Violations[MaxViolations], "50 violations") {
		t.Fatalf("want %d violations plus a total line, got count %d and %d lines", MaxViolations, res.Count, len(res.Violations))
	}
}
