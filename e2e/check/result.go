// Package check judges a workload.History: linearizability of the CAS
// registers (porcupine), unique creates, placement invariants on sampled
// states, monotonic read indexes, and convergence after a heal.
package check

import (
	"fmt"
	"maps"
	"slices"
)

// Result is one checker's verdict.
type Result struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Checked is how many items the checker examined.
	Checked int `json:"checked"`
	// Violations is capped at MaxViolations, plus a line with the total.
	Violations []string `json:"violations,omitempty"`
	// Count is the total number of violations found (not capped).
	Count int `json:"count,omitempty"`
	// TookMs is how long a waiting checker (Converge) took to pass.
	TookMs int64 `json:"tookMs,omitempty"`
	// Kinds counts the violations of a named kind among Count (KindLostAck,
	// KindOverCommit), which the reliability report totals on their own.
	Kinds map[string]int `json:"kinds,omitempty"`
}

// Violation kinds that the reliability report counts apart.
const (
	// KindLostAck is an acknowledged write missing from the final state.
	KindLostAck = "lostAck"
	// KindOverCommit is a node holding more than it has, in one sample:
	// reserved capacity, a pinned core, an exclusive or shared GPU.
	KindOverCommit = "overCommit"
)

// MaxViolations caps the violations a Result lists.
const MaxViolations = 20

// collector gathers a checker's violations under the cap and keeps the
// total, so a badly broken run still yields a readable result.
type collector struct {
	name    string
	checked int
	total   int
	list    []string
	kinds   map[string]int
}

func newCollector(name string) *collector { return &collector{name: name} }

func (c *collector) addf(format string, args ...any) {
	c.total++
	if len(c.list) < MaxViolations {
		c.list = append(c.list, fmt.Sprintf(format, args...))
	}
}

// kindf is addf for a violation of a kind the report counts apart.
func (c *collector) kindf(kind, format string, args ...any) {
	if c.kinds == nil {
		c.kinds = map[string]int{}
	}
	c.kinds[kind]++
	c.addf(format, args...)
}

func (c *collector) result() Result {
	r := Result{Name: c.name, OK: c.total == 0, Checked: c.checked, Violations: slices.Clone(c.list), Count: c.total,
		Kinds: maps.Clone(c.kinds)}
	if c.total > len(c.list) {
		r.Violations = append(r.Violations, fmt.Sprintf("... %d violations in total", c.total))
	}
	return r
}
