// Package bench measures amserver against real peers in the same run:
// placement, committed writes, failover and state size. Each suite returns
// Results; cmd/ambench prints them as a table and writes them as JSON.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Result is one row of a benchmark report.
type Result struct {
	Suite  string  `json:"suite"` // "sched", "cluster", "write", "failover", "state"
	Name   string  `json:"name"`  // e.g. "creates/s c=64 amserver"
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`             // "ops/s", "ms", "MiB", "ratio", "jobs/s"
	Target string  `json:"target,omitempty"` // e.g. ">= 1.0x etcd", "< 2000 ms"
	Met    *bool   `json:"met,omitempty"`    // nil when the row has no target
	Note   string  `json:"note,omitempty"`
}

// Options are what every suite is given.
type Options struct {
	Quick  bool   // a short run for CI smoke
	Dir    string // scratch dir for data
	Logger *slog.Logger
	// HeapHeadroom is the servers' soft memory limit headroom in bytes
	// (amserver's --heap-headroom-mib; 0: off): ambench runs it in its own
	// process, and the state suite's child runs it in its own.
	HeapHeadroom uint64
}

// Suite runs one family of measurements.
type Suite func(ctx context.Context, o Options) ([]Result, error)

// Suites are the registered suites by name; each suite's file adds itself
// in an init function.
var Suites = map[string]func(ctx context.Context, o Options) ([]Result, error){}

// SuiteNames returns the registered suite names, sorted.
func SuiteNames() []string {
	names := make([]string, 0, len(Suites))
	for n := range Suites {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Met returns a pointer to ok, for Result.Met.
func Met(ok bool) *bool { return &ok }

// PrintTable writes rs as an aligned table, one row per result.
func PrintTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "SUITE\tNAME\tVALUE\tUNIT\tTARGET\tSTATUS\tNOTE")
	for _, r := range rs {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Suite, r.Name, formatValue(r.Value), r.Unit, r.Target, status(r.Met), r.Note)
	}
	_ = tw.Flush()
}

func status(met *bool) string {
	switch {
	case met == nil:
		return ""
	case *met:
		return "MET"
	default:
		return "MISSED"
	}
}

// formatValue keeps about three significant digits without exponents, so
// that a column of throughputs and ratios reads at a glance.
func formatValue(v float64) string {
	abs := v
	if abs < 0 {
		abs = -abs
	}
	switch {
	case abs >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case abs >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// WriteJSON writes rs to path as an indented JSON array, creating the
// directory when needed.
func WriteJSON(path string, rs []Result) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create results dir: %w", err)
		}
	}
	if rs == nil {
		rs = []Result{} // an empty run is [] rather than null
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// Missed counts the rows with a target that was not met.
func Missed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.Met != nil && !*r.Met {
			n++
		}
	}
	return n
}

// ParseSuites turns a -suite flag ("all" or a comma list) into known suite
// names, in the order given.
func ParseSuites(flag string) ([]string, error) {
	if strings.TrimSpace(flag) == "" || flag == "all" {
		return SuiteNames(), nil
	}
	var out []string
	for _, n := range strings.Split(flag, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := Suites[n]; !ok {
			return nil, fmt.Errorf("unknown suite %q (have %s)", n, strings.Join(SuiteNames(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}
