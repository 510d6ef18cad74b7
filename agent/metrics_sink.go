package agent

import (
	"fmt"
	"sync"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raft and memberlist report through go-metrics' process-global sink (the
// compat package, which forwards to armon/go-metrics unless built with the
// hashicorpmetrics tag; importing compat here follows the same tag). There
// is one such sink per process: it is created once and every server's
// registry registers the same collector, so with several servers in one
// process (tests, dev) their raft_ and memberlist_ series are merged.
var (
	sinkOnce sync.Once
	sink     *gmprom.PrometheusSink
	errSink  error
)

// goMetricsSink returns the process's go-metrics Prometheus sink, installing
// it as go-metrics' global sink on first use.
func goMetricsSink() (prometheus.Collector, error) {
	sinkOnce.Do(func() {
		// Expiration 0 keeps series that stop changing (raft_peers is set
		// only on configuration changes) instead of dropping them after a
		// minute; the sink registers itself, so give it a throwaway registry
		// rather than the global default one.
		s, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			Name: "amserver_gometrics_sink", Registerer: prometheus.NewRegistry(),
		})
		if err != nil {
			errSink = fmt.Errorf("go-metrics prometheus sink: %w", err)
			return
		}
		cfg := gometrics.DefaultConfig("")
		cfg.EnableHostname = false       // a hostname prefix would make every gauge name host-specific
		cfg.EnableRuntimeMetrics = false // the registry's Go collector reports those
		if _, err := gometrics.NewGlobal(cfg, s); err != nil {
			errSink = fmt.Errorf("go-metrics global sink: %w", err)
			return
		}
		sink = s
	})
	return sink, errSink
}
