package bench

import (
	"testing"
	"time"
)

func TestWriteGoalRows(t *testing.T) {
	fast := writeMeasurement{ops: 1000, elapsed: time.Second, cpu: 300 * time.Millisecond, p50: time.Millisecond}
	slow := writeMeasurement{ops: 1000, elapsed: time.Second, cpu: 500 * time.Millisecond, p50: 2 * time.Millisecond}
	tests := []struct {
		name string
		m    map[int]writeMeasurement
		want []bool // Met of the CPU row, then the p50 row
	}{
		{"both met", map[int]writeMeasurement{1: fast, 64: fast}, []bool{true, true}},
		{"both missed", map[int]writeMeasurement{1: slow, 64: slow}, []bool{false, false}},
		{"nothing measured", map[int]writeMeasurement{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := writeGoalRows(tc.m)
			if len(rs) != len(tc.want) {
				t.Fatalf("%d rows, want %d", len(rs), len(tc.want))
			}
			for i, r := range rs {
				if r.Met == nil || *r.Met != tc.want[i] || r.Target == "" {
					t.Fatalf("row %q: met %v target %q, want met %v", r.Name, r.Met, r.Target, tc.want[i])
				}
			}
		})
	}
}

func TestWriteRatioRowsCarryTargetsAtEveryLevel(t *testing.T) {
	m := func(rate float64) writeMeasurement {
		return writeMeasurement{ops: int64(rate), elapsed: time.Second}
	}
	meas := map[string]map[int]writeMeasurement{
		"amserver": {1: m(900), 16: m(900), 64: m(900)},
		"etcd":     {1: m(1000), 16: m(1000), 64: m(1000)},
		"raw-raft": {1: m(1000), 16: m(1000), 64: m(1000)},
	}
	want := map[string]bool{ // 0.9 against >= 0.8 or >= 1.0
		"amserver/etcd c=1": true, "amserver/etcd c=16": false, "amserver/etcd c=64": false,
		"amserver/raw-raft c=1": true, "amserver/raw-raft c=16": true, "amserver/raw-raft c=64": true,
	}
	rs := writeRatioRows(meas)
	if len(rs) != len(want) {
		t.Fatalf("%d rows, want %d", len(rs), len(want))
	}
	for _, r := range rs {
		if r.Met == nil || *r.Met != want[r.Name] {
			t.Fatalf("%s: met %v, want %v", r.Name, r.Met, want[r.Name])
		}
	}
}

func TestMedian(t *testing.T) {
	if got := median(nil); got != 0 {
		t.Fatalf("median of nothing: %v", got)
	}
	if got := median([]time.Duration{5, 1, 3}); got != 3 {
		t.Fatalf("median: %v", got)
	}
}
