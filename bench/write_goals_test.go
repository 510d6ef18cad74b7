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
		want []*bool // Met of the CPU row, then of the (untargeted) first-server p50 row
	}{
		{"met", map[int]writeMeasurement{1: fast, 64: fast}, []*bool{Met(true), nil}},
		{"missed", map[int]writeMeasurement{1: slow, 64: slow}, []*bool{Met(false), nil}},
		{"nothing measured", map[int]writeMeasurement{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkMet(t, writeGoalRows(tc.m), tc.want)
		})
	}
}

func TestWriteDirectRows(t *testing.T) {
	side := func(p50 time.Duration) writeMeasurement {
		return writeMeasurement{ops: 500, elapsed: 10 * time.Second, p50: p50}
	}
	us := time.Microsecond
	tests := []struct {
		name             string
		leader, follower time.Duration
		want             []*bool // leader p50, follower p50 (no goal), forward adds
		wantFwd          float64 // ms
	}{
		{"both met", 1400 * us, 1650 * us, []*bool{Met(true), nil, Met(true)}, 0.25},
		{"forward exactly at goal", 1500 * us, 1800 * us, []*bool{Met(true), nil, Met(true)}, 0.3},
		{"leader slow, forward cheap", 3 * time.Millisecond, 3100 * us, []*bool{Met(false), nil, Met(true)}, 0.1},
		{"forward costly", time.Millisecond, 1800 * us, []*bool{Met(true), nil, Met(false)}, 0.8},
		{"follower faster than leader", 2 * time.Millisecond, 1900 * us, []*bool{Met(false), nil, Met(true)}, -0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := writeDirectRows(directMeasurement{leaderID: "s1", followerID: "s2", leader: side(tc.leader), follower: side(tc.follower)})
			checkMet(t, rs, tc.want)
			if got := rs[2].Value; got < tc.wantFwd-1e-9 || got > tc.wantFwd+1e-9 {
				t.Fatalf("forward adds %v ms, want %v", got, tc.wantFwd)
			}
		})
	}
	if rs := writeDirectRows(directMeasurement{leader: side(time.Millisecond)}); rs != nil {
		t.Fatalf("rows without follower creates: %+v", rs)
	}
}

// checkMet compares each row's Met with want (nil: a row without a goal,
// which must then have no target either).
func checkMet(t *testing.T, rs []Result, want []*bool) {
	t.Helper()
	if len(rs) != len(want) {
		t.Fatalf("%d rows, want %d", len(rs), len(want))
	}
	for i, r := range rs {
		switch {
		case want[i] == nil && (r.Met != nil || r.Target != ""):
			t.Fatalf("row %q: met %v target %q, want no goal", r.Name, r.Met, r.Target)
		case want[i] != nil && (r.Met == nil || *r.Met != *want[i] || r.Target == ""):
			t.Fatalf("row %q: met %v target %q, want met %v", r.Name, r.Met, r.Target, *want[i])
		}
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
