package fsm

import (
	"fmt"

	"github.com/amserver/amserver/ledger"
)

func (f *FSM) applyUpsertPool(t *tx, req *UpsertPoolRequest) (any, error) {
	p := req.Pool
	NormalizePool(&p)
	if err := ValidatePool(&p); err != nil {
		return nil, err
	}
	p.Usage, p.CreateIndex = ledger.PoolUsage{}, t.index
	oldGroup := ""
	if old := t.State.Pool(p.Name); old != nil {
		p.Usage, p.CreateIndex, oldGroup = old.Usage, old.CreateIndex, old.CapGroup
		if n := len(t.Spawns(p.Name)); n > 0 && p.Kind != PoolElastic {
			return nil, fmt.Errorf("%w: pool %s has %d provisioned nodes; it must stay elastic until they are given back", ErrInUse, p.Name, n)
		}
	}
	if over := capsExceeded(&p); over != "" {
		return nil, fmt.Errorf("%w: pool %s already holds more than the new %s cap", ErrConflict, p.Name, over)
	}
	if err := t.moveCapGroup(&p, oldGroup); err != nil {
		return nil, err
	}
	t.putPool(&p)
	return nil, nil
}

func capsExceeded(p *Pool) string {
	switch {
	case p.Caps.MaxCapacity > 0 && p.Usage.Capacity > p.Caps.MaxCapacity:
		return "maxCapacity"
	case p.Caps.MaxCores > 0 && p.Usage.Cores > p.Caps.MaxCores:
		return "maxCores"
	case p.Caps.MaxMemoryMiB > 0 && p.Usage.MemoryMiB > p.Caps.MaxMemoryMiB:
		return "maxMemoryMiB"
	}
	return ""
}

func (f *FSM) applyDeletePool(t *tx, req *DeletePoolRequest) (any, error) {
	p := t.State.Pool(req.Name)
	if p == nil {
		return nil, fmt.Errorf("pool %s: %w", req.Name, ErrNotFound)
	}
	if n := len(t.Nodes(p.Name)); n > 0 {
		return nil, fmt.Errorf("%w: pool %s has %d nodes", ErrInUse, p.Name, n)
	}
	if n := len(t.Spawns(p.Name)); n > 0 {
		return nil, fmt.Errorf("%w: pool %s has %d provisioned nodes to give back", ErrInUse, p.Name, n)
	}
	for _, b := range t.Bundles("", "") {
		if b.Spec.Pool == p.Name || (b.Spec.Resilience != nil && b.Spec.Resilience.Pool == p.Name) {
			return nil, fmt.Errorf("%w: bundle %s uses pool %s", ErrInUse, b.ID(), p.Name)
		}
	}
	for _, s := range t.Services() {
		for _, name := range s.Pools {
			if name == p.Name {
				return nil, fmt.Errorf("%w: node service %s uses pool %s", ErrInUse, s.ID, p.Name)
			}
		}
	}
	t.delete(tablePools, p)
	return nil, nil
}
