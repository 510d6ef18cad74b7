package worker

import (
	"strings"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	cases := []struct {
		name, in string
		want     int64
		ok       bool
	}{
		{"linux", "MemTotal:       16318540 kB\nMemFree:         1234 kB\n", 15936, true},
		{"not first", "MemFree: 1 kB\nMemTotal: 2048 kB\n", 2, true},
		{"missing", "MemFree: 1 kB\n", 0, false},
		{"no unit", "MemTotal: 2048\n", 0, false},
		{"not a number", "MemTotal: lots kB\n", 0, false},
		{"negative", "MemTotal: -5 kB\n", 0, false},
	}
	for _, tc := range cases {
		got, err := parseMemTotal(strings.NewReader(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %d, %v; want %d (ok %v)", tc.name, got, err, tc.want, tc.ok)
		}
	}
	if DetectMemoryMiB() <= 0 {
		t.Error("this host's /proc/meminfo gave no memory")
	}
}
