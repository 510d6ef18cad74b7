package convert

import (
	"math"
	"testing"
)

func TestToMilli(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want int64
		ok   bool
	}{
		{0, 0, true}, {2.5, 2500, true}, {0.001, 1, true}, {0.0015, 2, true}, {0.0004999, 0, false},
		{1e6, 1e9, true}, {-0.001, 0, false}, {math.NaN(), 0, false}, {math.Inf(1), 0, false},
		{math.Inf(-1), 0, false}, {1e300, 0, false}, {MaxUnits, MaxUnits * 1000, true},
	} {
		got, err := ToMilli(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ToMilli(%v) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestInstants(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"", true}, {"2030-01-02T03:04:05Z", true}, {"2030-01-02T03:04:05.123456789+02:00", true},
		{"1969-12-31T23:59:59Z", false}, {"1970-01-01T00:00:00Z", false}, {"2262-06-01T00:00:00Z", false},
		{"2030-01-02", false}, {"yesterday", false},
	} {
		n, err := ParseInstant(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseInstant(%q) = %d, %v; want ok=%v", tc.in, n, err, tc.ok)
		}
		if err == nil && tc.in != "" {
			back, _ := ParseInstant(FormatInstant(n))
			if back != n {
				t.Errorf("round trip of %q: %d != %d", tc.in, back, n)
			}
		}
	}
}
