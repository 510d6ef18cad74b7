package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// syntheticReports: two nemeses, three runs. kill-leader-2 has a lost
// create and a linearizability failure; pause-1 over-commits and does not
// converge; the harness failed once.
func syntheticReports() []Report {
	run := func(name, nemesis string, acked, failed, unknown int, results ...Result) Report {
		r := Report{Name: name, Nemesis: nemesis, Seed: 7, Acked: acked, Failed: failed, Unknown: unknown, OK: true}
		for _, res := range results {
			r.Add(res)
		}
		return r
	}
	ok := func(name string) Result { return Result{Name: name, OK: true} }
	conv := func(ms int64) Result { return Result{Name: "converge", OK: true, TookMs: ms} }
	return []Report{
		run("kill-leader-1", "kill-leader", 100, 10, 2, ok("linearizable"), ok("unique-creates"), ok("placement"),
			ok("monotonic-index"), conv(1200)),
		run("kill-leader-2", "kill-leader", 50, 5, 1,
			Result{Name: "linearizable", Violations: []string{"porcupine: not | linearizable\nat op 3"}},
			Result{Name: "unique-creates", Count: 2, Violations: []string{"a", "b"}, Kinds: map[string]int{KindLostAck: 1}},
			Result{Name: "final-registers", Count: 1, Violations: []string{"lost"}, Kinds: map[string]int{KindLostAck: 1}},
			ok("placement"), ok("monotonic-index"), conv(3400)),
		run("pause-1", "pause", 30, 20, 10, ok("linearizable"), ok("unique-creates"),
			Result{Name: "placement", Count: 25, Violations: []string{"over"}, Kinds: map[string]int{KindOverCommit: 25}},
			ok("monotonic-index"), Result{Name: "converge", Count: 1, Violations: []string{"not converged within 10s"}},
			Result{Name: "nemesis", Count: 1, Violations: []string{"heal failed"}}),
	}
}

func TestSummarize(t *testing.T) {
	sums := Summarize(syntheticReports())
	if len(sums) != 2 || sums[0].Nemesis != "kill-leader" || sums[1].Nemesis != "pause" {
		t.Fatalf("groups %+v", sums)
	}
	kl, p := sums[0], sums[1]
	checks := []struct {
		what      string
		got, want int
	}{
		{"kill-leader runs", kl.Runs, 2}, {"kill-leader passed", kl.Passed, 1},
		{"kill-leader acked", kl.Acked, 150}, {"kill-leader failed", kl.Failed, 15}, {"kill-leader unknown", kl.Unknown, 3},
		{"kill-leader linearizable", kl.Violations["linearizable"], 1},
		{"kill-leader unique-creates", kl.Violations["unique-creates"], 2},
		{"kill-leader other", kl.Violations["other"], 1},
		{"kill-leader lost acks", kl.LostAcks, 2},
		{"kill-leader worst convergence", int(kl.WorstConvergeMs), 3400},
		{"kill-leader not converged", kl.NotConverged, 0},
		{"pause passed", p.Passed, 0}, {"pause placement", p.Violations["placement"], 25},
		{"pause over-commits", p.OverCommits, 25}, {"pause other", p.Violations["other"], 1},
		{"pause not converged", p.NotConverged, 1}, {"pause worst convergence", int(p.WorstConvergeMs), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
}

func TestWriteReliability(t *testing.T) {
	var b strings.Builder
	meta := RunMeta{Date: time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC), Commit: "abc1234", Machine: "2 cores",
		Runs: 2, Duration: time.Minute, Took: 90 * time.Minute, Command: "make jepsen RUNS=2"}
	var rec Record
	rec.Merge(meta, syntheticReports(), map[string]time.Duration{"kill-leader": 3 * time.Minute})
	if err := WriteReliability(&b, rec, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"- 2026-12-02 01:30 UTC, commit abc1234: `make jepsen RUNS=2`, 1m0s of workload a run, deployment plain (no ACLs, no TLS). " +
			"Machine: 2 cores. Nemeses (and the time each took): kill-leader 3m0s, pause 1h30m0s.\n",
		"| nemesis | runs | passed | ops ok / failed / unknown | linearizable | unique creates | placement | monotonic index | other | lost acks | over-commits | worst convergence | ran |",
		"| kill-leader | 2 | 1 | 150 / 15 / 3 | 1 | 2 | 0 | 0 | 1 | 2 | 0 | 3.4s | 2026-12-02 01:30, abc1234, 2 × 1m0s |\n",
		"| pause | 1 | 0 | 30 / 20 / 10 | 0 | 0 | 25 | 0 | 1 | 0 | 25 | - (1 not within 10s) | 2026-12-02 01:30, abc1234, 1 of 2 (cut short) × 1m0s |\n",
		"| **all** | 3 | 1 | 180 / 35 / 13 | 1 | 2 | 25 | 0 | 2 | 2 | 25 | 3.4s (1 not within 10s) |  |\n",
		"- **kill-leader-2** (seed 7):\n  - linearizable, 1: porcupine: not \\| linearizable at op 3\n",
		"  - nemesis, 1: heal failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	var passing strings.Builder
	var clean Record
	clean.Merge(meta, syntheticReports()[:1], nil)
	if err := WriteReliability(&passing, clean, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(passing.String(), "Every run passed every check.") {
		t.Errorf("a passing matrix does not say so:\n%s", passing.String())
	}
}

// A later invocation replaces the rows of the nemeses it ran, with their
// failures, and keeps the rest; the record survives a write and a read.
func TestRecordMergeKeepsOtherNemeses(t *testing.T) {
	first := RunMeta{Date: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Commit: "old", Runs: 2, Duration: time.Minute}
	second := RunMeta{Date: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Commit: "new", Runs: 1, Duration: time.Minute, Secure: true}
	var rec Record
	rec.Merge(first, syntheticReports(), nil)
	rerun := Report{Name: "kill-leader-1", Nemesis: "kill-leader", Acked: 7, OK: true}
	rec.Merge(second, []Report{rerun}, map[string]time.Duration{"kill-leader": time.Hour})

	path := filepath.Join(t.TempDir(), "reliability.json")
	if err := WriteRecord(path, rec); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 2 {
		t.Fatalf("rows %+v, want kill-leader and pause", got.Rows)
	}
	kl, p := got.Rows[0], got.Rows[1]
	if kl.Summary.Nemesis != "kill-leader" || kl.Summary.Runs != 1 || kl.Summary.Acked != 7 || kl.Meta.Commit != "new" ||
		kl.Meta.Took != time.Hour || !kl.Meta.Secure || len(kl.Failures) != 0 {
		t.Errorf("kill-leader row not replaced by the rerun: %+v", kl)
	}
	if p.Summary.Nemesis != "pause" || p.Summary.Runs != 1 || p.Meta.Commit != "old" || len(p.Failures) == 0 ||
		p.Summary.Violations["placement"] != 25 {
		t.Errorf("pause row not kept: %+v", p)
	}
	if cell := ranCell(kl); cell != "2026-12-02 12:00, new, 1 × 1m0s, secure" {
		t.Errorf("ran cell %q", cell)
	}
}

// A rerun cut short replaces a row only when it has at least as many runs:
// stopping `make jepsen RUNS=20` early never loses a fuller row, and a
// finished rerun always replaces, however few runs it asked for.
func TestRecordMergeCutShort(t *testing.T) {
	at := func(h int, runs int) RunMeta {
		return RunMeta{Date: time.Date(2026, 12, 2, h, 0, 0, 0, time.UTC), Commit: fmt.Sprint("c", h), Runs: runs, Duration: time.Minute}
	}
	runs := func(n int) []Report {
		var out []Report
		for i := range n {
			out = append(out, Report{Name: fmt.Sprintf("pause-%d", i+1), Nemesis: "pause", Acked: 1, OK: true})
		}
		return out
	}
	cases := []struct {
		name      string
		old       RunMeta
		oldRuns   int
		new       RunMeta
		newRuns   int
		wantFrom  string
		wantCut   bool
		wantCount int
	}{
		{"cut short with fewer runs keeps the old row", at(1, 20), 20, at(2, 20), 5, "c1", false, 20},
		{"cut short with as many runs replaces", at(1, 3), 3, at(2, 20), 3, "c2", true, 3},
		{"cut short with more runs replaces", at(1, 3), 3, at(2, 20), 7, "c2", true, 7},
		{"finished with fewer runs replaces", at(1, 20), 20, at(2, 3), 3, "c2", false, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rec Record
			rec.Merge(c.old, runs(c.oldRuns), nil)
			rec.Merge(c.new, runs(c.newRuns), nil)
			if len(rec.Rows) != 1 {
				t.Fatalf("rows %+v", rec.Rows)
			}
			row := rec.Rows[0]
			if row.Meta.Commit != c.wantFrom || row.CutShort() != c.wantCut || row.Summary.Runs != c.wantCount {
				t.Errorf("row from %s, cut short %v, %d runs; want %s, %v, %d",
					row.Meta.Commit, row.CutShort(), row.Summary.Runs, c.wantFrom, c.wantCut, c.wantCount)
			}
		})
	}
}

func TestReadRecord(t *testing.T) {
	dir := t.TempDir()
	rec, err := ReadRecord(filepath.Join(dir, "missing.json"))
	if err != nil || len(rec.Rows) != 0 {
		t.Errorf("missing record: %+v, %v; want empty, nil", rec, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{rows"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("garbled record: %v, want an error naming the file", err)
	}
}

// docs/reliability.md is written from docs/reliability.json and must say
// what the record says, in this renderer's words: a report copied from an
// older checkout, or edited by hand, fails here. AMSERVER_UPDATE_DOCS=1
// (make reliability-doc) rewrites it from the record.
func TestReliabilityDocMatchesRecord(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	rec, err := ReadRecord(filepath.Join(docs, "reliability.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Rows) == 0 {
		t.Fatal("docs/reliability.json has no rows")
	}
	var b strings.Builder
	if err := WriteReliability(&b, rec, ConvergeWithin); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(docs, "reliability.md")
	if os.Getenv("AMSERVER_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Errorf("docs/reliability.md differs from what docs/reliability.json renders to; run make reliability-doc")
	}
}
