package agent

import (
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// The go-metrics sink is one per process; every server's registry shows it,
// and creating it again neither fails nor panics.
func TestMetricsGoMetricsSinkShared(t *testing.T) {
	var regs []*prometheus.Registry
	for range 2 {
		sink, err := goMetricsSink()
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		if err := reg.Register(sink); err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	gometrics.IncrCounter([]string{"raft", "metrics_test"}, 1)
	for i, reg := range regs {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range fams {
			found = found || f.GetName() == "raft_metrics_test"
		}
		if !found {
			t.Errorf("registry %d does not show the go-metrics counter", i)
		}
	}
}
