package check

import (
	"fmt"

	"github.com/amserver/amserver/e2e/workload"
)

// Minimums are how much a run must have got done for its other verdicts to
// mean anything. An empty history, or one where every request failed, is
// linearizable, has unique creates and breaks no placement rule: those
// checkers pass on nothing, so this one does not.
type Minimums struct {
	Reads   int // successful register reads
	Writes  int // successful writes and compare-and-sets
	Creates int // acknowledged bundle creates
	Samples int // state samples taken without an error
}

// Done counts what a run got done, in the terms of Minimums.
func Done(ops []workload.Op, samples []workload.Sample) Minimums {
	var d Minimums
	for _, op := range ops {
		if op.Outcome != workload.OK {
			continue
		}
		switch op.Kind {
		case workload.KindRead:
			d.Reads++
		case workload.KindWrite, workload.KindCAS:
			d.Writes++
		case workload.KindCreate:
			d.Creates++
		}
	}
	for _, s := range samples {
		if s.Error == "" {
			d.Samples++
		}
	}
	return d
}

// Evidence fails a run that did less than min.
func Evidence(ops []workload.Op, samples []workload.Sample, min Minimums) Result {
	c := newCollector("evidence")
	c.checked = len(ops) + len(samples)
	d := Done(ops, samples)
	for _, x := range []struct {
		what      string
		got, want int
	}{{"successful reads", d.Reads, min.Reads}, {"successful writes", d.Writes, min.Writes},
		{"acknowledged creates", d.Creates, min.Creates}, {"error-free state samples", d.Samples, min.Samples}} {
		if x.got < x.want {
			c.addf("%d %s, fewer than the %d a run needs for its verdicts to mean anything", x.got, x.what, x.want)
		}
	}
	return c.result()
}

// Least is the component-wise minimum of a and b.
func (m Minimums) Least(o Minimums) Minimums {
	return Minimums{Reads: min(m.Reads, o.Reads), Writes: min(m.Writes, o.Writes),
		Creates: min(m.Creates, o.Creates), Samples: min(m.Samples, o.Samples)}
}

// String prints the minimums for a report line.
func (m Minimums) String() string {
	return fmt.Sprintf("reads>=%d writes>=%d creates>=%d samples>=%d", m.Reads, m.Writes, m.Creates, m.Samples)
}
