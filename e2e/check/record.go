package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"
)

// Record is the reliability report's data, kept as JSON beside it
// (docs/reliability.json): one row per nemesis, each from the latest
// `make jepsen` that ran that nemesis (Merge says when a cut-short one
// counts). The full matrix at
// RUNS=20 outlasts a working session, so it can be run a few nemeses at a
// time; every row says when, on which commit and how often it ran.
type Record struct {
	Rows []RecordRow `json:"rows"`
}

// RecordRow is one nemesis's totals and where they came from.
type RecordRow struct {
	Summary NemesisSummary `json:"summary"`
	// Meta is the invocation that ran it; Took is this nemesis's share
	// (its runs, bring-ups included), not the whole invocation's.
	Meta RunMeta `json:"meta"`
	// Failures lists the failed runs' first violations (writeFailures).
	Failures []string `json:"failures,omitempty"`
}

// Merge replaces the rows of the nemeses in reports with their totals
// from this invocation and keeps every other row. took gives each
// nemesis's wall time; a nemesis missing from it keeps meta.Took.
//
// The report is written after every run, so a matrix cut short keeps what
// it finished: a nemesis with fewer runs than meta.Runs is cut short (so
// far), and such a row replaces an older one only when it has at least as
// many runs, so that stopping a rerun early never loses evidence.
func (r *Record) Merge(meta RunMeta, reports []Report, took map[string]time.Duration) {
	for _, s := range Summarize(reports) {
		m := meta
		if d, ok := took[s.Nemesis]; ok {
			m.Took = d
		}
		row := RecordRow{Summary: s, Meta: m, Failures: failureLines(nemesisReports(reports, s.Nemesis))}
		i := slices.IndexFunc(r.Rows, func(old RecordRow) bool { return old.Summary.Nemesis == s.Nemesis })
		switch {
		case i < 0:
			r.Rows = append(r.Rows, row)
		case row.CutShort() && r.Rows[i].Summary.Runs > s.Runs:
			// keep the fuller row
		default:
			r.Rows[i] = row
		}
	}
}

// CutShort says the row has fewer runs than its invocation asked for: the
// matrix is still running that nemesis, or was stopped during it.
func (row RecordRow) CutShort() bool { return row.Summary.Runs < row.Meta.Runs }

// nemesisReports is the reports of one nemesis, in order.
func nemesisReports(reports []Report, nemesis string) []Report {
	var out []Report
	for _, rep := range reports {
		if nemesisOf(rep) == nemesis {
			out = append(out, rep)
		}
	}
	return out
}

// ReadRecord reads a record written by WriteRecord; a missing file is an
// empty record, so the first run starts one.
func ReadRecord(path string) (Record, error) {
	var rec Record
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("read reliability record: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("reliability record %s: %w (delete it to start a new one)", path, err)
	}
	return rec, nil
}

// WriteRecord writes rec as indented JSON, one field a line, so a
// change of one row reads as such in a diff.
func WriteRecord(path string, rec Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode reliability record: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write reliability record: %w", err)
	}
	return nil
}
