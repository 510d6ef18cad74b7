package httpapi

import (
	"maps"
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// specFromAPI converts a submitted spec. Problems (bad times, negative or
// non-finite quantities) come back as invalidRequirement findings, to be
// reported with static validation's.
func specFromAPI(in api.BundleSpec) (fsm.BundleSpec, []fsm.Finding) {
	var cv converter
	spec := fsm.BundleSpec{
		ID: in.ID, Pool: in.Pool, Priority: in.Priority,
		Placement: fsm.Placement{SameNodeDefault: in.Placement.SameNodeDefault, SameAz: in.Placement.SameAz},
		StartAt:   cv.instant("startAt", in.StartAt),
		StopAt:    cv.instant("stopAt", in.StopAt),
		Tags:      maps.Clone(in.Tags),
	}
	if r := in.Resilience; r != nil {
		spec.Resilience = &fsm.Resilience{Pool: r.Pool, SameNode: r.SameNode, SameAz: r.SameAz, SameCloud: r.SameCloud}
	}
	if len(in.Jobs) > 0 {
		spec.Jobs = make([]fsm.Job, len(in.Jobs))
	}
	for i, j := range in.Jobs {
		cv.job = j.Name
		spec.Jobs[i] = fsm.Job{
			Name: j.Name, Requirements: requestFromAPI(&cv, j.Requirements),
			CoLocateWith: slices.Clone(j.CoLocateWith), SeparateFrom: slices.Clone(j.SeparateFrom),
			Tolerations: slices.Clone(j.Tolerations), Constraints: slices.Clone(j.Constraints),
			Launch: launchFromAPI(j.Launch),
		}
		for _, a := range j.Affinities {
			spec.Jobs[i].Affinities = append(spec.Jobs[i].Affinities, fsm.Affinity{Expression: a.Expression, Weight: a.Weight})
		}
	}
	return spec, cv.errs
}

func requestFromAPI(cv *converter, r api.Requirements) ledger.Request {
	return ledger.Request{
		Capacity:    cv.milli("requirements.capacity", r.Capacity),
		Cores:       r.Cores,
		GPUCapacity: cv.milli("requirements.gpuCapacity", r.GPUCapacity),
		GPUModel:    r.GPUModel, ExclusiveGPUs: r.ExclusiveGPUs,
		Capabilities: capRequestsFromAPI(r.Capabilities),
	}
}

func specToAPI(s *fsm.BundleSpec) api.BundleSpec {
	out := api.BundleSpec{
		ID: s.ID, Pool: s.Pool, Priority: s.Priority,
		Placement: api.Placement{SameNodeDefault: s.Placement.SameNodeDefault, SameAz: s.Placement.SameAz},
		StartAt:   formatInstant(s.StartAt), StopAt: formatInstant(s.StopAt),
		Tags: maps.Clone(s.Tags), Jobs: make([]api.Job, len(s.Jobs)),
	}
	if r := s.Resilience; r != nil {
		out.Resilience = &api.Resilience{Pool: r.Pool, SameNode: r.SameNode, SameAz: r.SameAz, SameCloud: r.SameCloud}
	}
	for i, j := range s.Jobs {
		req := j.Requirements
		out.Jobs[i] = api.Job{
			Name: j.Name,
			Requirements: api.Requirements{
				Capacity: fromMilli(req.Capacity), Cores: req.Cores, GPUCapacity: fromMilli(req.GPUCapacity),
				GPUModel: req.GPUModel, ExclusiveGPUs: req.ExclusiveGPUs, Capabilities: capRequestsToAPI(req.Capabilities),
			},
			CoLocateWith: slices.Clone(j.CoLocateWith), SeparateFrom: slices.Clone(j.SeparateFrom),
			Tolerations: slices.Clone(j.Tolerations), Constraints: slices.Clone(j.Constraints),
			Launch: launchToAPI(j.Launch),
		}
		for _, a := range j.Affinities {
			out.Jobs[i].Affinities = append(out.Jobs[i].Affinities, api.Affinity{Expression: a.Expression, Weight: a.Weight})
		}
	}
	return out
}

// bundleToAPI renders a bundle. Replica indexes are positions (0 is the
// primary); the ledger slot stays internal.
func bundleToAPI(b *fsm.Bundle) api.Bundle {
	out := api.Bundle{
		BundleSpec: specToAPI(&b.Spec), State: b.State, Epoch: b.Epoch,
		CreateIndex: b.CreateIndex, ModifyIndex: b.ModifyIndex,
		Replicas: make([]api.Replica, len(b.Replicas)), Degradations: make([]api.Degradation, len(b.Degradations)),
		Explain: explainToAPI(b.Explain),
	}
	for i, r := range b.Replicas {
		rep := api.Replica{Index: i, Role: r.Role, State: r.State, Jobs: make([]api.JobPlacement, len(r.Jobs))}
		if i == 0 {
			rep.Epoch = b.Epoch
		}
		for k, j := range r.Jobs {
			rep.Jobs[k] = api.JobPlacement{Name: j.Name, NodeID: j.NodeID, Status: j.Status}
			rep.Jobs[k].Cores, rep.Jobs[k].GPU, rep.Jobs[k].GPUs = grantDevices(j.Grant)
		}
		out.Replicas[i] = rep
	}
	for i, d := range b.Degradations {
		out.Degradations[i] = api.Degradation{Code: d.Code, Message: d.Message, Since: instant(d.Since)}
	}
	return out
}

// grantDevices is a grant's pinned cores, GPU share and exclusive GPUs.
func grantDevices(g ledger.Grant) ([]int, *api.GPUShare, []int) {
	var share *api.GPUShare
	if g.GPU != nil {
		share = &api.GPUShare{Index: g.GPU.Index, Capacity: fromMilli(g.GPU.Capacity)}
	}
	return slices.Clone(g.Cores), share, slices.Clone(g.ExclusiveGPUs)
}

func explainToAPI(e *fsm.Explain) *api.Explain {
	if e == nil {
		return nil
	}
	out := &api.Explain{NodesEvaluated: e.NodesEvaluated, Filtered: maps.Clone(e.Filtered)}
	if out.Filtered == nil {
		out.Filtered = map[string]int{}
	}
	if m := e.NearestMiss; m != nil {
		out.NearestMiss = &api.NearestMiss{NodeID: m.NodeID, Stage: m.Stage, Detail: m.Detail}
	}
	return out
}

// unplacedBundle is what a spec looks like before placement, for a plan
// that returns no bundle.
func unplacedBundle(spec fsm.BundleSpec) *fsm.Bundle {
	b := &fsm.Bundle{Spec: spec, State: fsm.StatePending, Epoch: 1}
	for i := range spec.Replicas() {
		r := fsm.Replica{Slot: i, Role: fsm.RoleBackup, State: fsm.StatePending}
		if i == 0 {
			r.Role = fsm.RolePrimary
		}
		for _, j := range spec.Jobs {
			r.Jobs = append(r.Jobs, fsm.JobPlacement{Name: j.Name})
		}
		b.Replicas = append(b.Replicas, r)
	}
	return b
}
