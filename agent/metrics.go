package agent

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/amserver/amserver/fsm"
)

// metrics is one server's Prometheus registry and its amserver_ metrics. A
// registry per server, not the global one, lets a test or the dev cluster
// run several servers in one process. Counters count what this process did
// since it started; counters of cluster work count it on the leader that
// committed it, so summing a counter over all servers counts each event
// once, and a leader change does not replay the past into the new leader.
type metrics struct {
	reg *prometheus.Registry

	placementLatency prometheus.Histogram
	placementBatch   prometheus.Histogram
	failovers        prometheus.Counter
	placements       prometheus.Counter
	unplaceable      prometheus.Counter
	promotions       prometheus.Counter
	evictions        prometheus.Counter
	events           *prometheus.CounterVec
}

// latencyBuckets span a fast batch (ms) to a bundle waiting minutes for room.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

func newMetrics(s *Server) (*metrics, error) {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.placementLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "amserver_placement_latency_seconds",
		Help: "Time from the leader first seeing a bundle pending to the commit of the plan that placed it " +
			"(bundles placed while pending; a new leader starts its clock when it takes over).",
		Buckets: latencyBuckets,
	})
	m.placementBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "amserver_placement_batch_duration_seconds",
		Help:    "Time the placer spent on one batch: placement decisions plus the Raft commit of the plan.",
		Buckets: latencyBuckets,
	})
	m.failovers = counter("amserver_failovers_total",
		"Bundles the failover duty repaired after a node went down or left (promotion or re-placement of lost jobs).")
	m.placements = counter("amserver_placements_total",
		"Bundles placed or moved (bundlePlaced events) in plans this server committed as leader.")
	m.unplaceable = counter("amserver_placement_failures_total",
		"Placement attempts that left a bundle unplaceable (bundleUnplaceable events) in plans this server committed as leader.")
	m.promotions = counter("amserver_promotions_total",
		"Backups promoted to primary (failover events), by failover or eviction, in plans this server committed as leader.")
	m.evictions = counter("amserver_evictions_total",
		"Bundles evicted by a higher-priority bundle (evicted events) in plans this server committed as leader.")
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "amserver_events_total",
		Help: "Cluster events recorded by commands this server committed as leader, by event type.",
	}, []string{"type"})

	sink, err := goMetricsSink()
	if err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.placementLatency, m.placementBatch, m.failovers, m.placements, m.unplaceable,
		m.promotions, m.evictions, m.events, newStateCollector(s), sink,
	} {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// handler serves the registry in the Prometheus text format. A collector
// that fails leaves the others served.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// committed counts the events of the command committed at index, on the
// leader that proposed it.
func (m *metrics) committed(st *fsm.State, index uint64) {
	st.EventTypesAt(index, m.count)
}

func (m *metrics) count(typ string) {
	m.events.WithLabelValues(typ).Inc()
	switch typ {
	case "bundlePlaced":
		m.placements.Inc()
	case "bundleUnplaceable":
		m.unplaceable.Inc()
	case "failover":
		m.promotions.Inc()
	case "evicted":
		m.evictions.Inc()
	}
}
