package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amserver/amserver/fsm"
)

// stateCollector reads gauges from this server's replica at scrape time, so
// they are right on every server and after any leader change, with nothing
// to keep in step.
type stateCollector struct {
	s *Server

	leader, applied, queue, bundles, degraded *prometheus.Desc
	// Per node: what placement may hand out and what reservations hold.
	nodeCapacity, nodeReservedCapacity, nodeMemory, nodeReservedMemory *prometheus.Desc
}

var _ prometheus.Collector = (*stateCollector)(nil)

// Every bundle state (fsm.BundleStates: a batch bundle's complete and
// failed were missing from a list of its own here) and degradation code is
// exported with zeros too, so that an alert on a series finds it before
// the first bundle ever gets there.
var (
	degradationCodes = []string{fsm.DegradeReplicaSpansAz, fsm.DegradeBackupSameCld, fsm.DegradeBackupSameAz,
		fsm.DegradeBackupSameNode, fsm.DegradeNoBackup}
)

func newStateCollector(s *Server) *stateCollector {
	return &stateCollector{
		s: s,
		leader: prometheus.NewDesc("amserver_is_leader",
			"1 while this server is the Raft leader, else 0.", nil, nil),
		applied: prometheus.NewDesc("amserver_applied_index",
			"Last Raft index applied to this server's state machine.", nil, nil),
		queue: prometheus.NewDesc("amserver_placement_queue_depth",
			"Bundles waiting for placement (state pending) in this server's replica.", nil, nil),
		bundles: prometheus.NewDesc("amserver_bundles",
			"Bundles by state in this server's replica.", []string{"state"}, nil),
		degraded: prometheus.NewDesc("amserver_degraded_bundles",
			"Bundles currently carrying a degradation (a relaxed resilience rule), by degradation code, "+
				"in this server's replica.", []string{"code"}, nil),
		nodeCapacity: prometheus.NewDesc("amserver_node_allocatable_capacity",
			"A node's allocatable capacity (totalCapacity × utilizationCap), in capacity units.", nodeLabels, nil),
		nodeReservedCapacity: prometheus.NewDesc("amserver_node_reserved_capacity",
			"Capacity the node's reservations hold, in capacity units.", nodeLabels, nil),
		nodeMemory: prometheus.NewDesc("amserver_node_memory_mib",
			"A node's totalMemoryMiB: what memory requests placed there may add up to.", nodeLabels, nil),
		nodeReservedMemory: prometheus.NewDesc("amserver_node_reserved_memory_mib",
			"Memory (MiB) the node's reservations' requests hold.", nodeLabels, nil),
	}
}

// nodeLabels label the per-node gauges.
var nodeLabels = []string{"node", "pool"}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.applied, c.queue, c.bundles, c.degraded,
		c.nodeCapacity, c.nodeReservedCapacity, c.nodeMemory, c.nodeReservedMemory} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	leader := 0.0
	if c.s.store.IsLeader() {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(c.s.store.AppliedIndex()))

	// Counts, not lists: a scrape costs the same at 100 bundles and 100,000
	// (it listed every bundle, about 50 ms of CPU at 100,000 per scrape).
	st := c.s.store.State()
	for _, state := range fsm.BundleStates {
		n := float64(st.CountBundles(state))
		ch <- prometheus.MustNewConstMetric(c.bundles, prometheus.GaugeValue, n, state)
		if state == fsm.StatePending {
			ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, n)
		}
	}
	for _, code := range degradationCodes {
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, float64(st.CountDegraded(code)), code)
	}
	c.collectNodes(ch, st)
}

// collectNodes exports each node's capacity and memory, total and reserved.
func (c *stateCollector) collectNodes(ch chan<- prometheus.Metric, st *fsm.State) {
	for _, n := range st.Nodes("") {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, n.ID, n.Pool)
		}
		gauge(c.nodeCapacity, float64(n.Allocatable())/1000)
		gauge(c.nodeReservedCapacity, float64(n.Usage.Capacity)/1000)
		gauge(c.nodeMemory, float64(n.TotalMemoryMiB))
		gauge(c.nodeReservedMemory, float64(n.Usage.MemoryMiB))
	}
}
