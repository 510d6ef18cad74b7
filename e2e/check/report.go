package check

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/amserver/amserver/e2e/workload"
)

// Report is one run's verdict.
type Report struct {
	Name string `json:"name"`
	// Nemesis is the fault the run injected (Name adds the run number).
	Nemesis string `json:"nemesis,omitempty"`
	Seed    int64  `json:"seed"`
	Ops     int    `json:"ops"`
	Samples int    `json:"samples"`
	// Acked, Failed and Unknown split Ops by outcome.
	Acked    int      `json:"acked"`
	Failed   int      `json:"failed"`
	Unknown  int      `json:"unknown"`
	Duration string   `json:"duration"`
	Results  []Result `json:"results"`
	OK       bool     `json:"ok"`
}

// NewReport fills a report's counts from a history; add results with Add.
func NewReport(name string, seed int64, h *workload.History, d time.Duration) Report {
	r := Report{Name: name, Seed: seed, Duration: d.String(), OK: true}
	if h == nil {
		return r
	}
	ops := h.Ops()
	r.Ops, r.Samples = len(ops), len(h.Samples())
	for _, op := range ops {
		switch op.Outcome {
		case workload.OK:
			r.Acked++
		case workload.Fail:
			r.Failed++
		case workload.Unknown:
			r.Unknown++
		}
	}
	return r
}

// Add appends a result; the report is OK only while every result is.
func (r *Report) Add(res Result) {
	r.Results = append(r.Results, res)
	r.OK = true
	for _, x := range r.Results {
		r.OK = r.OK && x.OK
	}
}

// WriteRun writes dir/<name>/summary.json, history.json (when h is not
// nil) and linearizability.html (when viz is not nil).
func WriteRun(dir string, r Report, h *workload.History, viz []byte) error {
	out := filepath.Join(dir, safeName(r.Name))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("write run %s: %w", r.Name, err)
	}
	summary, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write run %s: summary: %w", r.Name, err)
	}
	if err := os.WriteFile(filepath.Join(out, "summary.json"), append(summary, '\n'), 0o644); err != nil {
		return fmt.Errorf("write run %s: %w", r.Name, err)
	}
	if h != nil {
		if err := writeHistory(filepath.Join(out, "history.json"), h); err != nil {
			return fmt.Errorf("write run %s: %w", r.Name, err)
		}
	}
	if viz != nil {
		if err := os.WriteFile(filepath.Join(out, "linearizability.html"), viz, 0o644); err != nil {
			return fmt.Errorf("write run %s: %w", r.Name, err)
		}
	}
	return nil
}

func writeHistory(path string, h *workload.History) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := h.WriteJSON(f); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	return f.Close()
}

// safeName keeps a report name inside dir: no separators, no "..".
func safeName(name string) string {
	s := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, name)
	if s == "" || s == "." || s == ".." {
		s = "run"
	}
	return s
}

// PrintTable prints one row per report: name, seed, ops, unknown, one
// column per checker (ok, FAIL(n), or - when the checker did not run) and
// the verdict.
func PrintTable(w io.Writer, reports []Report) {
	var names []string
	seen := map[string]bool{}
	for _, r := range reports {
		for _, res := range r.Results {
			if !seen[res.Name] {
				seen[res.Name] = true
				names = append(names, res.Name)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := []string{"NAME", "SEED", "OPS", "UNKNOWN"}
	for _, n := range names {
		header = append(header, strings.ToUpper(n))
	}
	fmt.Fprintln(tw, strings.Join(append(header, "VERDICT"), "\t"))
	for _, r := range reports {
		cells := []string{r.Name, fmt.Sprint(r.Seed), fmt.Sprint(r.Ops), fmt.Sprint(r.Unknown)}
		for _, n := range names {
			cells = append(cells, cell(r, n))
		}
		verdict := "PASS"
		if !r.OK {
			verdict = "FAIL"
		}
		fmt.Fprintln(tw, strings.Join(append(cells, verdict), "\t"))
	}
	_ = tw.Flush() // a table is best effort: w's errors are the caller's
}

func cell(r Report, name string) string {
	for _, res := range r.Results {
		if res.Name != name {
			continue
		}
		if res.OK && res.TookMs > 0 {
			return "ok " + (time.Duration(res.TookMs) * time.Millisecond).String()
		}
		if res.OK {
			return "ok"
		}
		n := res.Count
		if n == 0 {
			n = max(len(res.Violations), 1)
		}
		return fmt.Sprintf("FAIL(%d)", n)
	}
	return "-"
}
