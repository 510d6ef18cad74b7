package bench

import (
	"testing"
	"time"
)

func TestSummarizeRSS(t *testing.T) {
	s := func(sec int, mib uint64) rssSample {
		return rssSample{at: time.Duration(sec) * time.Second, rss: mib << 20}
	}
	tests := []struct {
		name         string
		in           []rssSample
		median, peak uint64
		peakAt       time.Duration
	}{
		{"none", nil, 0, 0, 0},
		{"one", []rssSample{s(1, 600)}, 600 << 20, 600 << 20, time.Second},
		{"peak in the middle, first of two equal", []rssSample{s(1, 600), s(2, 900), s(3, 650), s(4, 900), s(5, 610)},
			650 << 20, 900 << 20, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, p, at := summarizeRSS(tt.in)
			if m != tt.median || p != tt.peak || at != tt.peakAt {
				t.Fatalf("summarizeRSS = %d, %d, %v; want %d, %d, %v", m, p, at, tt.median, tt.peak, tt.peakAt)
			}
		})
	}
}

func TestWriteBaselineIsTheQuieterIdle(t *testing.T) {
	idle := func(p99 time.Duration) *phase {
		p := &phase{}
		for i := range 100 {
			d := time.Millisecond
			if i >= 98 {
				d = p99
			}
			p.writes.add(d, nil)
		}
		return p
	}
	before, quietAfter, noisyAfter := idle(40*time.Millisecond), idle(10*time.Millisecond), idle(60*time.Millisecond)
	tests := []struct {
		name  string
		after *phase
		want  *phase
		which string
	}{
		{"after is quieter", quietAfter, quietAfter, "after"},
		{"after is noisier", noisyAfter, before, "before"},
		{"no second phase", nil, before, "before"},
		{"second phase wrote nothing", &phase{}, before, "before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, which := writeBaseline(before, tt.after)
			if got != tt.want || which != tt.which {
				t.Fatalf("writeBaseline chose %s (p99 %v), want %s", which, got.writes.q(0.99), tt.which)
			}
		})
	}
}
