package bench

import (
	"testing"
	"time"
)

type fixedCounts struct {
	ok     int64
	failed map[string]int64
}

func (f fixedCounts) counts() (int64, map[string]int64) { return f.ok, f.failed }

func TestSigtermResults(t *testing.T) {
	ms := time.Millisecond
	leader := func(exit, elected, acked time.Duration, handed bool) stSample {
		return stSample{leader: true, exit: exit, elected: elected, acked: acked, handedOver: handed, baseline: 4 * ms}
	}
	follower := func(exit time.Duration, kept bool) stSample {
		return stSample{exit: exit, elected: -1, acked: -1, leaderKept: kept, baseline: 2 * ms}
	}
	tests := []struct {
		name    string
		samples []stSample
		want    map[string]float64 // row name → value
		met     map[string]bool    // row name → met, for rows with a goal
	}{
		{
			name: "all met",
			samples: []stSample{
				leader(300*ms, 10*ms, 20*ms, true), follower(200*ms, true),
				leader(100*ms, 30*ms, 40*ms, true), follower(400*ms, true),
				leader(200*ms, 20*ms, -1, true), follower(100*ms, true),
			},
			want: map[string]float64{
				"SIGTERM leader → exit p50": 200, "SIGTERM leader → exit p99": 300, "SIGTERM leader → exit max": 300,
				"SIGTERM follower → exit p50": 200, "SIGTERM follower → exit max": 400,
				"SIGTERM leader → survivor leads p50": 20, "SIGTERM leader → survivor leads max": 30,
				// A leader trial without an acknowledged write has no sample.
				"SIGTERM leader → first write acked by new leader p50": 20,
				"SIGTERM leader → first write acked by new leader max": 40,
				"write before SIGTERM p50":                             2, "write before SIGTERM max": 4,
				"SIGTERM leader → handed over before exit": 3, "SIGTERM follower → leader kept": 3,
				"writes failed: noLeader": 2, "writes failed: outcomeUnknown": 0,
			},
			met: map[string]bool{
				"SIGTERM leader → exit max": true, "SIGTERM follower → exit max": true,
				"SIGTERM leader → handed over before exit": true, "SIGTERM follower → leader kept": true,
			},
		},
		{
			name: "a slow exit and an election",
			samples: []stSample{
				leader(5001*ms, 900*ms, 950*ms, false), follower(5*time.Second, false),
				leader(100*ms, 10*ms, 12*ms, true),
			},
			want: map[string]float64{
				"SIGTERM leader → exit p50": 100, "SIGTERM leader → exit max": 5001,
				"SIGTERM follower → exit max":              5000,
				"SIGTERM leader → handed over before exit": 1, "SIGTERM follower → leader kept": 0,
			},
			met: map[string]bool{
				"SIGTERM leader → exit max": false, "SIGTERM follower → exit max": true, // the goal is inclusive
				"SIGTERM leader → handed over before exit": false, "SIGTERM follower → leader kept": false,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			load := fixedCounts{ok: 90, failed: map[string]int64{stNoLeader: 2}}
			rows := map[string]Result{}
			for _, r := range stResults(SigtermPlan{Servers: 3, WriteRate: 30}, tt.samples, load) {
				if r.Suite != "sigterm" {
					t.Errorf("row %q in suite %q", r.Name, r.Suite)
				}
				rows[r.Name] = r
			}
			for name, want := range tt.want {
				r, ok := rows[name]
				if !ok {
					t.Errorf("no row %q", name)
					continue
				}
				if r.Value != want {
					t.Errorf("%s = %v, want %v", name, r.Value, want)
				}
			}
			for name, r := range rows {
				want, hasGoal := tt.met[name]
				switch {
				case hasGoal && r.Met == nil:
					t.Errorf("%s has no goal", name)
				case hasGoal && *r.Met != want:
					t.Errorf("%s met = %v, want %v (value %v, target %s)", name, *r.Met, want, r.Value, r.Target)
				case !hasGoal && r.Met != nil:
					t.Errorf("%s has a goal %q; only exits' max and the counts do", name, r.Target)
				}
			}
		})
	}
}

func TestSigtermResultsEmpty(t *testing.T) {
	if rs := stResults(SigtermPlan{}, nil, fixedCounts{}); rs != nil {
		t.Errorf("no samples gave %d rows", len(rs))
	}
}

func TestSigtermPlanDefaults(t *testing.T) {
	tests := []struct {
		quick  bool
		trials int
	}{{false, 10}, {true, 3}}
	for _, tt := range tests {
		p, err := SigtermPlan{Root: "/repo"}.withDefaults(tt.quick)
		if err != nil {
			t.Fatal(err)
		}
		if p.Trials != tt.trials || p.Servers != 3 || p.WriteRate != 30 || p.Root != "/repo" {
			t.Errorf("quick=%v: %+v", tt.quick, p)
		}
	}
}
