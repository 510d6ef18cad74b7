package check

import (
	"testing"

	"github.com/amserver/amserver/e2e/workload"
)

// TestEvidenceCannotPassOnNothing: the histories every other checker
// passes without looking (nothing, or nothing but failures) fail here.
func TestEvidenceCannotPassOnNothing(t *testing.T) {
	min := Minimums{Reads: 2, Writes: 2, Creates: 1, Samples: 1}
	ok := func(k workload.Kind) workload.Op { return workload.Op{Kind: k, Outcome: workload.OK} }
	failed := func(k workload.Kind) workload.Op {
		return workload.Op{Kind: k, Outcome: workload.Fail, Error: "refused"}
	}
	enough := []workload.Op{ok(workload.KindRead), ok(workload.KindRead), ok(workload.KindWrite), ok(workload.KindCAS),
		ok(workload.KindCreate)}
	cases := []struct {
		name    string
		ops     []workload.Op
		samples []workload.Sample
		pass    bool
	}{
		{"empty history", nil, nil, false},
		{"every client failed", []workload.Op{failed(workload.KindRead), failed(workload.KindWrite), failed(workload.KindCreate),
			{Kind: workload.KindCAS, Outcome: workload.Unknown}}, []workload.Sample{{Error: "refused"}}, false},
		{"no samples", enough, nil, false},
		{"only failed samples", enough, []workload.Sample{{Error: "timeout"}}, false},
		{"no creates", enough[:4], []workload.Sample{{}}, false},
		{"enough of everything", enough, []workload.Sample{{}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Evidence(tc.ops, tc.samples, min)
			if res.OK != tc.pass {
				t.Fatalf("ok %v, want %v: %v", res.OK, tc.pass, res.Violations)
			}
		})
	}
}
