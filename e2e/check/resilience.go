package check

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

// checkResilience: a backup honours each forbid of the bundle's
// resilience unless the bundle records the degradation that relaxes it.
// The degradation is derived from where the replicas actually are, so a
// shared domain without it is a bug. An AZ or cloud label that is missing
// is not a shared domain.
func checkResilience(c *collector, where string, b *api.Bundle, nodes map[string]*api.Node) {
	r := b.Resilience
	if r == nil || len(b.Replicas) < 2 {
		return
	}
	degraded := map[string]bool{}
	for _, d := range b.Degradations {
		degraded[d.Code] = true
	}
	prim, back := replicaNodes(b.Replicas[0]), replicaNodes(b.Replicas[1])
	rules := []struct {
		field, rule, code, what, label string
	}{
		{"sameNode", r.SameNode, DegradeBackupSameNode, "node", ""},
		{"sameAz", r.SameAz, DegradeBackupSameAz, "az", "az"},
		{"sameCloud", r.SameCloud, DegradeBackupSameCloud, "cloud", "cloud"},
	}
	for _, rule := range rules {
		if rule.rule != api.Forbid || degraded[rule.code] {
			continue
		}
		shared := intersect(domainsOf(prim, nodes, rule.label), domainsOf(back, nodes, rule.label))
		if len(shared) > 0 {
			c.addf("%s: bundle %s backup shares %s %s with its primary (%s forbid) without degradation %s",
				where, b.ID, rule.what, strings.Join(shared, ","), rule.field, rule.code)
		}
	}
}

func replicaNodes(r api.Replica) []string {
	var out []string
	for _, j := range r.Jobs {
		if j.NodeID != "" {
			out = append(out, j.NodeID)
		}
	}
	return out
}

// domainsOf maps node ids to their label values (label "" means the node
// ids themselves), skipping nodes the sample does not list.
func domainsOf(ids []string, nodes map[string]*api.Node, label string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		if label == "" {
			out[id] = true
			continue
		}
		if n := nodes[id]; n != nil && n.Labels[label] != "" {
			out[n.Labels[label]] = true
		}
	}
	return out
}

func intersect(a, b map[string]bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if b[k] {
			out = append(out, k)
		}
	}
	return out
}

// checkEpochs: over the linearizable samples, if sample A returned before
// sample B was called, no bundle's epoch in B is below its epoch in A.
// Bundle ids are never reused by the workload, so a bundle absent from B
// is simply skipped.
func checkEpochs(c *collector, samples []workload.Sample) {
	var good []*workload.Sample
	for i := range samples {
		if s := &samples[i]; !s.Stale && s.Error == "" {
			good = append(good, s)
		}
	}
	byCall := slices.Clone(good)
	slices.SortStableFunc(byCall, func(a, b *workload.Sample) int { return cmp.Compare(a.Call, b.Call) })
	byReturn := slices.Clone(good)
	slices.SortStableFunc(byReturn, func(a, b *workload.Sample) int { return cmp.Compare(a.Return, b.Return) })
	type seen struct {
		epoch uint64
		in    *workload.Sample
	}
	highest := map[string]seen{}
	next := 0
	for _, b := range byCall {
		for ; next < len(byReturn) && byReturn[next].Return < b.Call; next++ {
			for _, bun := range byReturn[next].Bundles {
				if bun.Epoch > highest[bun.ID].epoch {
					highest[bun.ID] = seen{bun.Epoch, byReturn[next]}
				}
			}
		}
		for _, bun := range b.Bundles {
			if h, ok := highest[bun.ID]; ok && bun.Epoch < h.epoch {
				c.addf("%s: bundle %s epoch %d went back from %d in the earlier %s",
					sampleName(b), bun.ID, bun.Epoch, h.epoch, sampleName(h.in))
			}
		}
	}
}
