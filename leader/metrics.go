package leader

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amserver/amserver/fsm"
)

// Metrics are what the duties observe; the server registers them. Unset
// ones observe nothing.
type Metrics struct {
	// PlacementBatch times one placer batch: decisions plus the commit.
	PlacementBatch prometheus.Observer
	// PlacementLatency times a bundle from first seen pending to placed.
	PlacementLatency prometheus.Observer
	// Failovers counts bundles the failover duty repaired.
	Failovers prometheus.Counter
}

func (m *Metrics) setDefaults() {
	if m.PlacementBatch == nil {
		m.PlacementBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "unregistered_batch"})
	}
	if m.PlacementLatency == nil {
		m.PlacementLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "unregistered_latency"})
	}
	if m.Failovers == nil {
		m.Failovers = prometheus.NewCounter(prometheus.CounterOpts{Name: "unregistered_failovers"})
	}
}

// pendingSince remembers when this leader first saw each pending bundle, for
// the placement latency. Leader-local and rebuilt every term: it measures,
// it decides nothing.
type pendingSince map[string]time.Time

// see starts the clock of every pending bundle in the queue not yet seen.
func (w pendingSince) see(queue []*fsm.Bundle, now time.Time) {
	for _, b := range queue {
		if b.State != fsm.StatePending {
			continue
		}
		if _, ok := w[b.ID()]; !ok {
			w[b.ID()] = now
		}
	}
}

// settle observes the bundles that left pending by being placed and forgets
// every bundle that left pending at all (placed, unplaceable, deleted).
func (w pendingSince) settle(st *fsm.State, h prometheus.Observer, now time.Time) {
	for id, since := range w {
		b := st.Bundle(id)
		if b != nil && b.State == fsm.StatePending {
			continue
		}
		if b != nil && (b.State == fsm.StatePlaced || b.State == fsm.StateDegraded) {
			h.Observe(now.Sub(since).Seconds())
		}
		delete(w, id)
	}
}
