package httpapi

import (
	"maps"
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
	"github.com/amserver/amserver/ledger"
)

var (
	specPair   = convert.MustPair[api.BundleSpec, fsm.BundleSpec]()
	bundlePair = convert.MustPair[api.Bundle, fsm.Bundle](convert.Skip("Replicas", "EffectivePriority"))
	// bundleViewPair shares the bundle's tags, command lines and such with
	// the state, for a list page that encodes the bundle at once
	// (bundleViewInto).
	bundleViewPair = convert.MustPair[api.Bundle, fsm.Bundle](convert.Skip("Replicas", "EffectivePriority"), convert.View())
	// A replica's index is its position and its epoch the bundle's; a job's
	// devices are read from its grant (the ledger slot and grant stay inside).
	replicaPair   = convert.MustPair[api.Replica, fsm.Replica](convert.Skip("Index", "Epoch", "Jobs"))
	placementPair = convert.MustPair[api.JobPlacement, fsm.JobPlacement](convert.Skip("Grant", "Cores", "GPU", "GPUs", "ExitCode", "AssignmentID"))
	gpuSharePair  = convert.MustPair[api.GPUShare, ledger.GPUShare]()
)

// specFromAPI converts a submitted spec. Problems (bad times, negative or
// non-finite quantities) come back as invalidRequirement findings, to be
// reported with static validation's.
func specFromAPI(in api.BundleSpec) (fsm.BundleSpec, []fsm.Finding) {
	var spec fsm.BundleSpec
	problems := specPair.ToFSM(&spec, &in)
	return spec, jobFindings(problems, func(i int) string { return in.Jobs[i].Name })
}

func specToAPI(s *fsm.BundleSpec) api.BundleSpec {
	var out api.BundleSpec
	specPair.ToAPI(&out, s)
	if out.Jobs == nil {
		out.Jobs = []api.Job{} // "jobs" is never null on a read
	}
	withoutReservedTags(&out)
	return out
}

// withoutReservedTags drops the server's "__" tags from what a reader of a
// bundle sees (DESIGN §2.3); workers see them in their assignments.
func withoutReservedTags(s *api.BundleSpec) {
	s.Tags = fsm.WithoutReservedTags(s.Tags)
	for i := range s.Jobs {
		l := &s.Jobs[i].Launch
		if l.Tags = fsm.WithoutReservedTags(l.Tags); len(l.Tags) == 0 {
			l.Tags = nil
		}
	}
}

// bundleToAPI renders a bundle. Replica indexes are positions (0 is the
// primary); the ledger slot stays internal.
func bundleToAPI(b *fsm.Bundle) api.Bundle {
	var out api.Bundle
	bundleToAPIInto(&out, b)
	return out
}

// bundleToAPIInto renders b into out, overwriting all of it but reusing
// its lists of jobs, replicas and placements: a list page renders each of
// its bundles into one value it encodes at once, instead of a value (and
// its copy in an interface) per bundle.
func bundleToAPIInto(out *api.Bundle, b *fsm.Bundle) { bundleInto(out, b, bundlePair) }

// bundleViewInto is bundleToAPIInto sharing with b what the API types
// share with the FSM's (convert.View): out is read only, and only while
// the state b is in stays as it is. A page of a thousand whole bundles
// copied 450 KB of maps and lists this way.
func bundleViewInto(out *api.Bundle, b *fsm.Bundle) { bundleInto(out, b, bundleViewPair) }

func bundleInto(out *api.Bundle, b *fsm.Bundle, pair *convert.Pair[api.Bundle, fsm.Bundle]) {
	jobs, reps := out.Jobs[:0], out.Replicas
	*out = api.Bundle{}
	out.Jobs = jobs // the converter refills it in place
	pair.ToAPI(out, b)
	out.EffectivePriority = b.Spec.EffectivePriority()
	if out.Jobs == nil {
		out.Jobs = []api.Job{}
	}
	withoutReservedTags(&out.BundleSpec)
	if out.Degradations == nil {
		out.Degradations = []api.Degradation{}
	}
	if out.Explain != nil && out.Explain.Filtered == nil {
		e := *out.Explain // a view's is the state's own
		e.Filtered = map[string]int{}
		out.Explain = &e
	}
	out.Replicas = resized(reps, len(b.Replicas))
	for i := range b.Replicas {
		r, rep := &b.Replicas[i], &out.Replicas[i]
		placed := rep.Jobs
		*rep = api.Replica{}
		replicaPair.ToAPI(rep, r)
		if b.Outcome != "" {
			rep.State = b.Outcome // its jobs hold no node: not "pending", finished
		}
		rep.Index = i
		if i == 0 && !b.Spec.IsService() {
			rep.Epoch = b.Epoch
		}
		rep.Jobs = resized(placed, len(r.Jobs))
		clear(rep.Jobs)
		for k := range r.Jobs {
			placementPair.ToAPI(&rep.Jobs[k], &r.Jobs[k])
			rep.Jobs[k].Cores, rep.Jobs[k].GPU, rep.Jobs[k].GPUs = grantDevices(r.Jobs[k].Grant)
			if r.Jobs[k].Status == fsm.JobExited || r.Jobs[k].ExitCode != 0 {
				code := int(r.Jobs[k].ExitCode)
				rep.Jobs[k].ExitCode = &code
			}
			if j := &r.Jobs[k]; j.Placed() {
				rep.Jobs[k].AssignmentID = fsm.AssignmentID(b.ID(), r.Slot, j.Name, j.NodeID)
			} else if b.Ran != nil {
				rep.Jobs[k].AssignmentID = b.RanAs(r.Slot, j.Name) // its output stays readable a while
			}
		}
	}
}

// grantDevices is a grant's pinned cores, GPU share and exclusive GPUs.
func grantDevices(g ledger.Grant) ([]int, *api.GPUShare, []int) {
	var share *api.GPUShare
	if g.GPU != nil {
		share = &api.GPUShare{}
		gpuSharePair.ToAPI(share, g.GPU)
	}
	return slices.Clone(g.Cores), share, slices.Clone(g.ExclusiveGPUs)
}

// explainToAPI gives an explanation's filter counts as an object, never
// null; e may be the FSM's own (the types are one), so it is copied.
func explainToAPI(e *fsm.Explain) *api.Explain {
	if e == nil {
		return nil
	}
	out := *e
	out.Filtered = maps.Clone(e.Filtered)
	if out.Filtered == nil {
		out.Filtered = map[string]int{}
	}
	if m := e.NearestMiss; m != nil {
		miss := *m
		out.NearestMiss = &miss
	}
	return &out
}

// unplacedBundle is what a spec looks like before placement, for a plan
// that returns no bundle.
func unplacedBundle(spec fsm.BundleSpec) *fsm.Bundle {
	b := &fsm.Bundle{Spec: spec, State: fsm.StatePending, Epoch: 1}
	for i := range spec.Replicas() {
		r := fsm.Replica{Slot: i, Role: spec.RoleAt(i), State: fsm.StatePending}
		for _, j := range spec.Jobs {
			r.Jobs = append(r.Jobs, fsm.JobPlacement{Name: j.Name})
		}
		b.Replicas = append(b.Replicas, r)
	}
	return b
}
