package agent

import (
	"context"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// maxBundlesPerPlan bounds one Raft entry; a burst is placed over several.
const maxBundlesPerPlan = 512

// placer is the placement loop: it places pending bundles (gold, silver,
// bronze, then age), completes missing backups, heals degraded ones, and
// retries unplaceable bundles only after the cluster changed. Its queue is
// rebuilt from the replicated state on every pass.
type placer struct {
	s *Server
	// tried rate-limits preemption searches, which read every reservation
	// on the candidate nodes: leader-local and disposable, not state.
	tried map[string]time.Time
}

// Preemption budget: searches per pass, and the pause before a bundle that
// found no victims is searched again.
const (
	preemptPerPass = 16
	preemptRetry   = 30 * time.Second
)

func (p *placer) Name() string { return "placement" }

func (p *placer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		watch := p.s.fsm.WatchCh()
		committed := p.pass(ctx)
		if committed == 0 && !waitChange(ctx, watch, 5*time.Second) {
			return
		}
	}
}

// pass places one batch and returns how many plan parts committed.
func (p *placer) pass(ctx context.Context) int {
	st := p.s.store.State()
	queue := placementQueue(st)
	if len(queue) == 0 {
		return 0
	}
	if len(queue) > maxBundlesPerPlan {
		queue = queue[:maxBundlesPerPlan]
	}
	batch := p.s.engine.Snapshot(st).NewBatch(p.s.raft.AppliedIndex())
	budget := preemptPerPass
	for _, b := range queue {
		p.placeOne(batch, b, &budget)
	}
	return p.s.applyBatch(ctx, batch)
}

// placeOne heals, places, or — for a primary that does not fit and a band
// that can evict someone — preempts lower bands (DESIGN §3.6).
func (p *placer) placeOne(batch *scheduler.Batch, b *fsm.Bundle, budget *int) {
	switch {
	case needsHeal(b):
		batch.Heal(b)
	case p.mayPreempt(b, budget):
		if res := batch.Preempt(b); res.Update == nil {
			batch.Place(b) // nothing to evict: record why it does not fit
		}
	default:
		batch.Place(b)
	}
}

func (p *placer) mayPreempt(b *fsm.Bundle, budget *int) bool {
	if b.Replicas[0].Complete() || fsm.Band(b.Spec.Priority) >= fsm.Band(fsm.PriorityBronze) || *budget == 0 {
		return false
	}
	if p.tried == nil {
		p.tried = map[string]time.Time{}
	}
	now := time.Now()
	if last, ok := p.tried[b.ID()]; ok && now.Sub(last) < preemptRetry {
		return false
	}
	for id, at := range p.tried {
		if now.Sub(at) >= preemptRetry {
			delete(p.tried, id)
		}
	}
	p.tried[b.ID()] = now
	*budget--
	return true
}

// placementQueue lists the bundles that need the placer, ordered by band,
// then submission time, then id (DESIGN §3.6).
func placementQueue(st *fsm.State) []*fsm.Bundle {
	changed := st.Index("nodes", "pools")
	var out []*fsm.Bundle
	for _, b := range st.BundlesInState(fsm.StatePending, fsm.StateUnplaceable, fsm.StateDegraded) {
		switch {
		case b.State == fsm.StatePending:
		case b.AttemptIndex >= changed:
			continue // tried against this very cluster: wait for a change
		}
		out = append(out, b)
	}
	sortByBand(out)
	return out
}

// needsHeal: the bundle is fully placed but carries a relaxed backup rule.
func needsHeal(b *fsm.Bundle) bool {
	for i := range b.Replicas {
		if !b.Replicas[i].Complete() {
			return false
		}
	}
	return b.State == fsm.StateDegraded
}
