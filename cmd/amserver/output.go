package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// table writes aligned columns. Every cell goes through clean, because
// values come from the server and a tab or an escape sequence in a label
// would otherwise break the layout or the terminal.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = clean(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// printJSON prints v indented, as the API sent it (field names and all).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// doneJSON is what --json prints for a command whose API answer has no
// body (204), so that a script always reads one JSON document: what the
// command acted on and what became of it.
type doneJSON struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Result string `json:"result"`
}

// clean quotes s when it holds anything a terminal would not print as-is.
func clean(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// qty prints an API quantity with at most the milli-unit precision the
// server keeps.
func qty(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// memoryUse prints reserved against total memory, e.g. "2048/32768 MiB";
// "-" for a node without memory that holds none.
func memoryUse(reserved, total int64) string {
	if total == 0 && reserved == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d MiB", reserved, total)
}

// memoryRequest prints a job's memory request and limit, e.g.
// "2048 MiB (limit 4096)"; "-" for neither.
func memoryRequest(request, limit int64) string {
	switch {
	case request == 0 && limit == 0:
		return "-"
	case limit == 0:
		return fmt.Sprintf("%d MiB", request)
	}
	return fmt.Sprintf("%d MiB (limit %d)", request, limit)
}

// frac prints used against total, e.g. "2.5/16 cap".
func frac(used, total float64, unit string) string {
	s := qty(used) + "/" + qty(total)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// coreSet prints a set of core numbers as ranges: "0-3,8".
func coreSet(cores []int) string {
	if len(cores) == 0 {
		return "-"
	}
	c := slices.Sorted(slices.Values(cores))
	c = slices.Compact(c)
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(c[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func intList(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// kv prints a map as sorted key=value pairs.
func kv(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func list(v []string) string {
	if len(v) == 0 {
		return "-"
	}
	return strings.Join(v, ",")
}

// ago prints t relative to now in one unit ("12s ago", "in 5m"), or as a
// date when it is too far off for a relative time to help.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	case d < 30*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	default:
		return t.Local().Format("2006-01-02 15:04")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
