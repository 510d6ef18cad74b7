package check

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

// fwr is a write of value v to reg-0 from call to ret.
func fwr(id int, v int64, call, ret int64, out workload.Outcome) workload.Op {
	return workload.Op{ID: id, Kind: workload.KindWrite, Key: "reg-0", Value: v, Call: call, Return: ret, Outcome: out}
}

func register(v string) []api.Bundle {
	b := api.Bundle{BundleSpec: workload.RegisterSpec("e2e", "reg-0", 0)}
	b.Tags = map[string]string{"v": v}
	return []api.Bundle{b}
}

func TestFinalRegisters(t *testing.T) {
	ok, unk, fail := workload.OK, workload.Unknown, workload.Fail
	tests := []struct {
		name  string
		ops   []workload.Op
		final []api.Bundle
		want  string // "" passes; otherwise a lost ack whose text contains it
	}{
		{"last acknowledged write", []workload.Op{fwr(1, 10, 0, 5, ok), fwr(2, 20, 6, 9, ok)}, register("20"), ""},
		{"concurrent acknowledged write may be last", []workload.Op{fwr(1, 10, 0, 7, ok), fwr(2, 20, 6, 9, ok)}, register("10"), ""},
		{"overwritten acknowledged write lost", []workload.Op{fwr(1, 10, 0, 5, ok), fwr(2, 20, 6, 9, ok)}, register("10"), "op 2"},
		{"unknown write may be last", []workload.Op{fwr(1, 10, 0, 5, unk), fwr(2, 20, 6, 9, ok)}, register("10"), ""},
		{"failed write never is", []workload.Op{fwr(1, 10, 0, 5, ok), fwr(2, 20, 6, 9, fail)}, register("20"), "no write wrote"},
		{"back at zero", []workload.Op{fwr(1, 10, 0, 5, ok)}, register("0"), "op 1"},
		{"zero with nothing acknowledged", []workload.Op{fwr(1, 10, 0, 5, unk), fwr(2, 20, 6, 9, fail)}, register("0"), ""},
		{"register gone", []workload.Op{fwr(1, 10, 0, 5, ok)}, nil, "missing from the final state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FinalRegisters(tt.ops, tt.final)
			if tt.want == "" {
				if !got.OK {
					t.Fatalf("want pass, got %v", got.Violations)
				}
				return
			}
			if got.OK || !strings.Contains(strings.Join(got.Violations, "\n"), tt.want) {
				t.Fatalf("want a violation containing %q, got %+v", tt.want, got)
			}
			if tt.name != "failed write never is" && got.Kinds[KindLostAck] != 1 {
				t.Errorf("lost acks %d, want 1", got.Kinds[KindLostAck])
			}
		})
	}
}
