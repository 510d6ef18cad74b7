package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestBurstLead(t *testing.T) {
	tests := []struct {
		name    string
		bundles int
		rate    float64
		want    time.Duration
		wantErr bool
	}{
		{"quick 2-job", 1000, 500, 11 * time.Second, false},                     // 2 s × 3 + 5 s
		{"full 2-job", 10000, 2000, 20 * time.Second, false},                    // 5 s × 3 + 5 s
		{"fractional", 3, 2, 9500 * time.Millisecond, false},                    // 1.5 s × 3 + 5 s
		{"fast creates", 100, 1e6, 5*time.Second + 300*time.Microsecond, false}, // 0.1 ms × 3 + 5 s
		{"no bundles", 0, 500, 0, true},
		{"no rate", 1000, 0, 0, true},
		{"negative rate", 1000, -1, 0, true},
		{"NaN rate", 1000, math.NaN(), 0, true},
		{"infinite rate", 1000, math.Inf(1), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := burstLead(tc.bundles, tc.rate)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("lead %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShapeHoldsMatchesWhatWaitPlacedWaitsFor(t *testing.T) {
	wantCores := map[string]int64{"2-job bundles": 1, "4-job bundles + backup": 2}
	for _, shape := range clusterShapes {
		t.Run(shape.name, func(t *testing.T) {
			milli, cores := shapeHolds(shape)
			if milli != shape.milli {
				t.Fatalf("spec holds %d milli-units, shape says %d", milli, shape.milli)
			}
			if cores != wantCores[shape.name] {
				t.Fatalf("spec pins %d cores, want %d", cores, wantCores[shape.name])
			}
		})
	}
}

func TestClusterRoom(t *testing.T) {
	tests := []struct {
		name    string
		nodes   int
		jobs    int
		wantErr bool
	}{
		{"full run", clusterNodes, clusterJobs, false},
		{"quick run", clusterNodes, clusterJobs / 10, false},
		{"ten times the jobs", clusterNodes, 10 * clusterJobs, true},
		{"a tenth of the nodes", clusterNodes / 10, clusterJobs, true},
		{"no nodes", 0, clusterJobs, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := clusterRoom(tc.nodes, tc.jobs); (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
		})
	}
	// The full run: 2 × (10,000 × 1.5 + 2,500 × 5) = 55,000 units of
	// ~240,000, and 2 × (10,000 + 5,000) = 30,000 cores of ~200,000.
	capacity, cores := clusterShares(clusterNodes, clusterJobs)
	if capacity < 0.2 || capacity > 0.25 || cores < 0.13 || cores > 0.17 {
		t.Fatalf("full run holds %.3f of the capacity and %.3f of the cores", capacity, cores)
	}
}

func TestBurstCheckSubmit(t *testing.T) {
	tests := []struct {
		name      string
		submitted time.Duration
		wantErr   bool
	}{
		{"well before startAt", 5 * time.Second, false},
		{"just before", 20*time.Second - time.Millisecond, false},
		{"at startAt", 20 * time.Second, true},
		{"after", 25 * time.Second, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := burstRun{bundles: 10000, lead: 20 * time.Second, submitted: tc.submitted}
			if err := m.checkSubmit(); (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestBurstResult(t *testing.T) {
	two := clusterShapes[0]
	tests := []struct {
		name      string
		placed    time.Duration
		firstLeft int
		want      float64
		met       bool
		noteHas   string
	}{
		{"met", 1500 * time.Millisecond, 10000, 20000 / 1.5, true, "in one Timer entry"},
		{"exactly at goal", 2 * time.Second, 10000, 10000, true, "in one Timer entry"},
		{"missed", 4 * time.Second, 10000, 5000, false, "in one Timer entry"},
		{"left over several entries", time.Second, 600, 20000, true, "600 of them in the first state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := burstRun{shape: two, bundles: 10000, lead: 20 * time.Second, submitted: 5 * time.Second,
				timer: 700 * time.Millisecond, firstLeft: tc.firstLeft, placed: tc.placed, entries: 20, cpu: time.Second}
			r := m.result()
			checkMet(t, []Result{r}, []*bool{Met(tc.met)})
			if math.Abs(r.Value-tc.want) > 1e-6 {
				t.Fatalf("value %v, want %v", r.Value, tc.want)
			}
			for _, s := range []string{tc.noteHas, "creates were not in the window", "50 µs CPU per job", "15.00s before", "over 20 Raft entries"} {
				if !strings.Contains(r.Note, s) {
					t.Fatalf("note %q lacks %q", r.Note, s)
				}
			}
			if want := "committed placements, 2-job bundles, burst of due starts (placement alone)"; r.Name != want || r.Unit != "jobs/s" {
				t.Fatalf("row %q in %s, want %q in jobs/s", r.Name, r.Unit, want)
			}
		})
	}
}

func TestBurstSpecIDsAndStart(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600))
	for _, shape := range clusterShapes {
		t.Run(shape.name, func(t *testing.T) {
			combined, burst := shape.spec(7), burstSpec(shape, at)(7)
			if burst.ID == combined.ID || !strings.HasSuffix(burst.ID, combined.ID) {
				t.Fatalf("burst id %q beside combined %q", burst.ID, combined.ID)
			}
			got, err := time.Parse(time.RFC3339Nano, burst.StartAt)
			if err != nil || !got.Equal(at) {
				t.Fatalf("startAt %q (%v), want %v", burst.StartAt, err, at)
			}
			if combined.StartAt != "" || len(burst.Jobs) != len(combined.Jobs) || burst.Pool != combined.Pool {
				t.Fatalf("burst spec %+v differs from combined %+v beyond id and startAt", burst, combined)
			}
		})
	}
}
