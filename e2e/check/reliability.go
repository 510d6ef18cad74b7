package check

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ConvergeWithin is the time a cluster gets, after a run's final heal, to
// agree on one state with every bundle placed (issue 21's 10 s); the
// report counts the runs that took longer apart.
const ConvergeWithin = 10 * time.Second

// The checkers the reliability report gives a column each; every other
// failed result (final registers, evidence, convergence, the harness's
// own nemesis and setup findings) is counted under "other".
var reportCheckers = []struct{ name, title string }{
	{"linearizable", "linearizable"},
	{"unique-creates", "unique creates"},
	{"placement", "placement"},
	{"monotonic-index", "monotonic index"},
}

// RunMeta is the reliability report's header: what ran, where and when.
type RunMeta struct {
	Date     time.Time
	Commit   string // with "-dirty" when the tree had changes
	Machine  string
	Runs     int           // runs per nemesis asked for
	Duration time.Duration // workload time per run
	Took     time.Duration // the whole matrix, bring-ups included
	Secure   bool
	Command  string
}

// NemesisSummary totals one nemesis's runs.
type NemesisSummary struct {
	Nemesis                string
	Runs, Passed           int
	Acked, Failed, Unknown int
	Violations             map[string]int // by checker column, plus "other"
	LostAcks, OverCommits  int
	WorstConvergeMs        int64 // among runs that converged
	NotConverged           int   // runs that did not converge in time
}

// violationCount is how many violations a failed result stands for: its
// total, else its listed lines, and at least one.
func violationCount(res Result) int {
	if res.OK {
		return 0
	}
	return max(res.Count, len(res.Violations), 1)
}

// Summarize groups reports by nemesis, in the order nemeses first appear.
func Summarize(reports []Report) []NemesisSummary {
	var out []NemesisSummary
	index := map[string]int{}
	for _, r := range reports {
		name := nemesisOf(r)
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, NemesisSummary{Nemesis: name, Violations: map[string]int{}})
		}
		out[i].add(r)
	}
	return out
}

// nemesisOf is the nemesis a report ran under (older reports: its name).
func nemesisOf(r Report) string {
	if r.Nemesis != "" {
		return r.Nemesis
	}
	return r.Name
}

func (s *NemesisSummary) add(r Report) {
	s.Runs++
	if r.OK {
		s.Passed++
	}
	s.Acked += r.Acked
	s.Failed += r.Failed
	s.Unknown += r.Unknown
	for _, res := range r.Results {
		s.LostAcks += res.Kinds[KindLostAck]
		s.OverCommits += res.Kinds[KindOverCommit]
		if res.Name == "converge" {
			if res.OK {
				s.WorstConvergeMs = max(s.WorstConvergeMs, res.TookMs)
			} else {
				s.NotConverged++
			}
			continue
		}
		column := "other"
		for _, c := range reportCheckers {
			if c.name == res.Name {
				column = c.name
			}
		}
		s.Violations[column] += violationCount(res)
	}
}

// WriteReliability writes docs/reliability.md from the record: the
// header, the invocations the rows came from, one row per nemesis with
// the total, and the first violations of every failed run.
func WriteReliability(w io.Writer, rec Record, convergeWithin time.Duration) error {
	var b strings.Builder
	writeHeader(&b, convergeWithin)
	writeInvocations(&b, rec)
	cols := []string{"nemesis", "runs", "passed", "ops ok / failed / unknown"}
	for _, c := range reportCheckers {
		cols = append(cols, c.title)
	}
	cols = append(cols, "other", "lost acks", "over-commits", "worst convergence", "ran")
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat(" --- |", len(cols)))
	var total NemesisSummary
	total.Nemesis, total.Violations = "**all**", map[string]int{}
	var failures []string
	for _, row := range rec.Rows {
		writeRow(&b, row.Summary, convergeWithin, ranCell(row))
		total.merge(row.Summary)
		failures = append(failures, row.Failures...)
	}
	writeRow(&b, total, convergeWithin, "")
	if len(failures) == 0 {
		b.WriteString("\nEvery run passed every check.\n")
	} else {
		b.WriteString("\n## Failed runs\n\n" + strings.Join(failures, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write reliability report: %w", err)
	}
	return nil
}

// ranCell names a row's run: when, on what, how many and how long.
func ranCell(row RecordRow) string {
	m := row.Meta
	runs := fmt.Sprint(m.Runs)
	if row.CutShort() {
		runs = fmt.Sprintf("%d of %d (cut short)", row.Summary.Runs, m.Runs)
	}
	cell := fmt.Sprintf("%s, %s, %s × %s", m.Date.UTC().Format("2006-01-02 15:04"), m.Commit, runs, m.Duration)
	if m.Secure {
		cell += ", secure"
	}
	return cell
}

func (s *NemesisSummary) merge(o NemesisSummary) {
	s.Runs += o.Runs
	s.Passed += o.Passed
	s.Acked += o.Acked
	s.Failed += o.Failed
	s.Unknown += o.Unknown
	for k, v := range o.Violations {
		s.Violations[k] += v
	}
	s.LostAcks += o.LostAcks
	s.OverCommits += o.OverCommits
	s.WorstConvergeMs = max(s.WorstConvergeMs, o.WorstConvergeMs)
	s.NotConverged += o.NotConverged
}

func writeHeader(b *strings.Builder, convergeWithin time.Duration) {
	fmt.Fprintf(b, "# Reliability: the fault matrix on Docker\n\n")
	fmt.Fprintf(b, "Written by `make jepsen` (e2e/jepsen_test.go) from docs/reliability.json; do not edit by hand. "+
		"Each row is the latest run of its nemesis: `make jepsen RUNS=20 NEMESES=a,b` replaces rows a and b "+
		"and keeps the others, so rows can come from different days and commits; the last column says which, "+
		"and how many runs of how much workload each. The report is rewritten after every run: a matrix stopped "+
		"during a nemesis keeps that nemesis's finished runs (marked cut short), and a cut-short row never replaces "+
		"one with more runs. Every run gets a fresh cluster.\n\n")
	fmt.Fprintf(b, "Operations are the workload's requests: ok (acknowledged), failed (definitely not applied) and "+
		"unknown (timed out or cut off: may or may not have applied). Violation columns count what each checker "+
		"found, summed over the runs; \"other\" is the final-register check, the evidence minimums, convergence and "+
		"the harness's own findings (a nemesis action or the return to health that failed). Lost acks are "+
		"acknowledged creates or register writes missing from the final state; over-commits are findings of a node "+
		"holding more than it has (capacity, a pinned core, a GPU) in a state sample. Worst convergence is the "+
		"longest time, after the final heal, until every bundle was placed and every server had the same digest; "+
		"runs that did not converge within %s are counted apart.\n\n", convergeWithin)
}

// writeInvocations lists the `make jepsen` runs the rows came from, the
// machine each ran on and how long each nemesis took there.
func writeInvocations(b *strings.Builder, rec Record) {
	type inv struct {
		meta    RunMeta
		nemeses []string
	}
	var invs []inv
	for _, row := range rec.Rows {
		m := row.Meta
		i := slices.IndexFunc(invs, func(v inv) bool { return v.meta.Date.Equal(m.Date) && v.meta.Commit == m.Commit })
		if i < 0 {
			i = len(invs)
			invs = append(invs, inv{meta: m})
		}
		took := row.Summary.Nemesis
		if m.Took > 0 { // rows carried over from the one-piece report have none
			took += " " + m.Took.Round(time.Second).String()
		}
		invs[i].nemeses = append(invs[i].nemeses, took)
	}
	b.WriteString("Runs:\n\n")
	for _, v := range invs {
		mode := "plain (no ACLs, no TLS)"
		if v.meta.Secure {
			mode = "secure (ACLs, TLS with client certificates, mutual TLS on Raft, gossip encryption)"
		}
		fmt.Fprintf(b, "- %s, commit %s: `%s`, %s of workload a run, deployment %s. Machine: %s. Nemeses (and the time each took): %s.\n",
			v.meta.Date.UTC().Format("2006-01-02 15:04 UTC"), v.meta.Commit, v.meta.Command, v.meta.Duration, mode,
			v.meta.Machine, strings.Join(v.nemeses, ", "))
	}
	b.WriteString("\n")
}

func writeRow(b *strings.Builder, s NemesisSummary, convergeWithin time.Duration, ran string) {
	cells := []string{s.Nemesis, fmt.Sprint(s.Runs), fmt.Sprint(s.Passed),
		fmt.Sprintf("%d / %d / %d", s.Acked, s.Failed, s.Unknown)}
	for _, c := range reportCheckers {
		cells = append(cells, fmt.Sprint(s.Violations[c.name]))
	}
	conv := "-"
	if s.Runs > s.NotConverged {
		conv = (time.Duration(s.WorstConvergeMs) * time.Millisecond).String()
	}
	if s.NotConverged > 0 {
		conv += fmt.Sprintf(" (%d not within %s)", s.NotConverged, convergeWithin)
	}
	cells = append(cells, fmt.Sprint(s.Violations["other"]), fmt.Sprint(s.LostAcks), fmt.Sprint(s.OverCommits), conv, ran)
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

// failureLines lists, per failed run, its seed and the first violation
// of each failed check: enough to find the run under e2e/out.
func failureLines(reports []Report) []string {
	var lines []string
	for _, r := range reports {
		if r.OK {
			continue
		}
		lines = append(lines, fmt.Sprintf("- **%s** (seed %d):", r.Name, r.Seed))
		for _, res := range r.Results {
			if res.OK {
				continue
			}
			first := ""
			if len(res.Violations) > 0 {
				first = ": " + clip(res.Violations[0], 300)
			}
			lines = append(lines, fmt.Sprintf("  - %s, %d%s", res.Name, violationCount(res), first))
		}
	}
	return lines
}

// clip keeps a violation on one line of at most n runes.
func clip(s string, n int) string {
	s = strings.NewReplacer("\n", " ", "|", "\\|").Replace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
