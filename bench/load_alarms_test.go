package bench

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAlarms(t *testing.T) {
	page := `# HELP memberlist_msg_suspect memberlist_msg_suspect
# TYPE memberlist_msg_suspect counter
memberlist_msg_suspect{node="s1"} 2
memberlist_msg_suspect{node="s2"} 1.5
memberlist_msg_suspect_total 99
memberlist_msg_dead 3
memberlist_msg_alive 40
`
	a, err := parseAlarms(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if a != (gossipAlarms{suspect: 3.5, dead: 3}) {
		t.Fatalf("parseAlarms = %+v, want suspect 3.5, dead 3", a)
	}
	if _, err := parseAlarms(strings.NewReader("memberlist_msg_dead x\n")); err == nil {
		t.Fatal("a garbled value was accepted")
	}
}

// The row misses on any member declared down, and on counters that could
// not be read (an unknown figure is no zero); suspicions alone pass.
func TestAlarmRow(t *testing.T) {
	cases := []struct {
		name   string
		loaded *phase
		met    bool
	}{
		{"quiet", &phase{}, true},
		{"refuted suspicions", &phase{alarms: gossipAlarms{suspect: 4}}, true},
		{"declared down", &phase{alarms: gossipAlarms{suspect: 4, dead: 1}}, false},
		{"unreadable", &phase{alarmsErr: errors.New("s2: refused")}, false},
	}
	for _, tc := range cases {
		r := alarmRow("x", tc.loaded, &phase{})
		if r.Met == nil || *r.Met != tc.met {
			t.Errorf("%s: met = %v, want %v", tc.name, r.Met, tc.met)
		}
	}
}
