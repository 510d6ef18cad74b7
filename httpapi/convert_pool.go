package httpapi

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// poolFromAPI converts a pool definition; name comes from the path and the
// read-only fields (usage, indexes) are ignored.
func poolFromAPI(name string, in api.Pool) (fsm.Pool, error) {
	var cv converter
	p := fsm.Pool{
		Name: name, Kind: in.Kind, Scoring: in.Scoring,
		Caps:     ledger.PoolCaps{MaxCapacity: cv.milli("caps.maxCapacity", in.Caps.MaxCapacity), MaxCores: in.Caps.MaxCores},
		Defaults: fsm.PoolDefaults{Capacity: cv.milli("defaults.capacity", in.Defaults.Capacity), Cores: in.Defaults.Cores},
		MinNodes: in.MinNodes, MaxNodes: in.MaxNodes, Warm: in.Warm,
		IdleTimeout:  cv.duration("idleTimeout", in.IdleTimeout),
		SpawnTimeout: cv.duration("spawnTimeout", in.SpawnTimeout),
	}
	for _, t := range in.Tiers {
		p.Tiers = append(p.Tiers, fsm.Tier{Name: t.Name, Cloud: t.Cloud})
	}
	for i, it := range in.InstanceTypes {
		field := fmt.Sprintf("instanceTypes[%d]", i)
		p.InstanceTypes = append(p.InstanceTypes, fsm.InstanceType{
			Name: it.Name, TotalCapacity: cv.milli(field+".totalCapacity", it.TotalCapacity),
			TotalCores: it.TotalCores, GPUs: gpusFromAPI(&cv, field+".gpus", it.GPUs),
			Capabilities: capabilitiesFromAPI(it.Capabilities),
		})
	}
	if pr := in.Provisioner; pr != nil {
		p.Provisioner = &fsm.Provisioner{URL: pr.URL, Command: slices.Clone(pr.Command)}
	}
	return p, cv.err()
}

func poolToAPI(p *fsm.Pool) api.Pool {
	out := api.Pool{
		Name: p.Name, Kind: p.Kind, Scoring: p.Scoring,
		Caps:     api.PoolCaps{MaxCapacity: fromMilli(p.Caps.MaxCapacity), MaxCores: p.Caps.MaxCores},
		Defaults: api.PoolDefaults{Capacity: fromMilli(p.Defaults.Capacity), Cores: p.Defaults.Cores},
		MinNodes: p.MinNodes, MaxNodes: p.MaxNodes, Warm: p.Warm,
		IdleTimeout: formatDuration(p.IdleTimeout), SpawnTimeout: formatDuration(p.SpawnTimeout),
		Usage:       api.PoolUsage{Capacity: fromMilli(p.Usage.Capacity), Cores: p.Usage.Cores},
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex,
	}
	for _, t := range p.Tiers {
		out.Tiers = append(out.Tiers, api.Tier{Name: t.Name, Cloud: t.Cloud})
	}
	for _, it := range p.InstanceTypes {
		out.InstanceTypes = append(out.InstanceTypes, api.InstanceType{
			Name: it.Name, TotalCapacity: fromMilli(it.TotalCapacity), TotalCores: it.TotalCores,
			GPUs: gpusToAPI(it.GPUs), Capabilities: capabilitiesToAPI(it.Capabilities),
		})
	}
	if pr := p.Provisioner; pr != nil {
		out.Provisioner = &api.Provisioner{URL: pr.URL, Command: slices.Clone(pr.Command)}
	}
	return out
}

func launchFromAPI(in api.Launch) fsm.Launch {
	return fsm.Launch{Driver: in.Driver, Command: slices.Clone(in.Command), Env: maps.Clone(in.Env)}
}

func launchToAPI(in fsm.Launch) api.Launch {
	return api.Launch{Driver: in.Driver, Command: slices.Clone(in.Command), Env: maps.Clone(in.Env)}
}

func capRequestsFromAPI(in []api.CapabilityRequest) []ledger.CapabilityRequest {
	if len(in) == 0 {
		return nil
	}
	out := make([]ledger.CapabilityRequest, len(in))
	for i, r := range in {
		out[i] = ledger.CapabilityRequest{Name: r.Name, Count: r.Count, AttributeMatches: maps.Clone(r.AttributeMatches)}
	}
	return out
}

func capRequestsToAPI(in []ledger.CapabilityRequest) []api.CapabilityRequest {
	if len(in) == 0 {
		return nil
	}
	out := make([]api.CapabilityRequest, len(in))
	for i, r := range in {
		out[i] = api.CapabilityRequest{Name: r.Name, Count: r.Count, AttributeMatches: maps.Clone(r.AttributeMatches)}
	}
	return out
}

// serviceFromAPI converts a node service; id comes from the path.
func serviceFromAPI(id string, in api.NodeService) fsm.NodeService {
	return fsm.NodeService{
		ID: id, Pools: slices.Clone(in.Pools), Consumes: capRequestsFromAPI(in.Consumes),
		Provides: capabilitiesFromAPI(in.Provides), Lifecycle: in.Lifecycle, Launch: launchFromAPI(in.Launch),
	}
}

func serviceToAPI(s *fsm.NodeService) api.NodeService {
	return api.NodeService{
		ID: s.ID, Pools: slices.Clone(s.Pools), Consumes: capRequestsToAPI(s.Consumes),
		Provides: capabilitiesToAPI(s.Provides), Lifecycle: s.Lifecycle, Launch: launchToAPI(s.Launch),
		CreateIndex: s.CreateIndex, ModifyIndex: s.ModifyIndex,
	}
}
