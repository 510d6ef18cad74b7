package fsm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amserver/amserver/internal/rowstore"

	"github.com/amserver/amserver/ledger"
)

// Cluster-wide caps and cap groups (DESIGN §2.2): reservation ceilings above
// the pools'. The cluster's cover every reservation; a cap group's cover the
// pools whose capGroup names it, such as pools that share one rack's power.
// Each scope is a row of tableCaps holding its caps and what the
// reservations it covers hold, kept by the ledger (ledger/scope.go) with the
// same invariant as a pool's: usage never exceeds a non-zero cap.

// maxCapGroups bounds the named groups of one PUT /v1/caps.
const maxCapGroups = 256

// CapScope is one scope's row: ledger.ClusterScope or ledger.GroupScope.
type CapScope struct {
	Name  string           `json:"name"`
	Caps  ledger.PoolCaps  `json:"caps"`
	Usage ledger.PoolUsage `json:"usage"`
	// ModifyIndex is the index of the last change to the caps, not of
	// every usage change.
	ModifyIndex uint64 `json:"modifyIndex"`
}

// ClusterCaps is what PUT /v1/caps sets: the cluster's caps and every cap
// group's. A group it leaves out has no caps (pools may still name it).
type ClusterCaps struct {
	Caps   ledger.PoolCaps            `json:"caps"`
	Groups map[string]ledger.PoolCaps `json:"groups,omitempty"`
}

// SetCapsRequest replaces the cluster's caps and cap groups.
type SetCapsRequest struct {
	Caps ClusterCaps
}

// setCapsWire is how the apply side decodes a SetCapsRequest: the same
// bytes, with the groups' caps behind pointers. go-msgpack decodes every
// value of a map[string]struct into one reused struct, so a field that
// omitempty left out of one group's encoding kept the previous group's
// value (a group without a memory cap took its neighbour's); pointers get
// a fresh value each.
type setCapsWire struct {
	Caps struct {
		Caps   ledger.PoolCaps             `json:"caps"`
		Groups map[string]*ledger.PoolCaps `json:"groups,omitempty"`
	}
}

func (f *FSM) applySetCapsWire(t *tx, w *setCapsWire) (any, error) {
	req := SetCapsRequest{Caps: ClusterCaps{Caps: w.Caps.Caps}}
	for name, c := range w.Caps.Groups {
		if req.Caps.Groups == nil {
			req.Caps.Groups = map[string]ledger.PoolCaps{}
		}
		if c != nil {
			req.Caps.Groups[name] = *c
		} else {
			req.Caps.Groups[name] = ledger.PoolCaps{}
		}
	}
	return f.applySetCaps(t, &req)
}

// CapScopeRow returns a scope's row, or nil when it has neither caps nor
// usage.
func (s *State) CapScopeRow(name string) *CapScope {
	return first[CapScope](s.txn, tableCaps, "id", name)
}

// CapScopes lists every scope with caps or usage, by name.
func (s *State) CapScopes() []*CapScope { return all[CapScope](s.txn, tableCaps, "id") }

// ValidateClusterCaps checks a PUT /v1/caps body.
func ValidateClusterCaps(c *ClusterCaps) error {
	if len(c.Groups) > maxCapGroups {
		return findingErr(CodeLimitExceeded, fmt.Sprintf("%d cap groups, at most %d allowed", len(c.Groups), maxCapGroups))
	}
	if err := validCaps("cluster caps", c.Caps); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(c.Groups)) {
		if !validName(name) {
			return invalidf("cap group name %q must match %s", name, namePattern)
		}
		if err := validCaps("cap group "+name, c.Groups[name]); err != nil {
			return err
		}
	}
	return nil
}

func validCaps(what string, c ledger.PoolCaps) error {
	switch {
	case c.MaxCapacity < 0 || c.MaxCores < 0 || c.MaxMemoryMiB < 0:
		return invalidf("%s must be >= 0", what)
	case c.MaxCapacity > maxPoolQuantity || c.MaxCores > maxPoolCores || c.MaxMemoryMiB > maxPoolMemoryMiB:
		return findingErr(CodeLimitExceeded, fmt.Sprintf("%s must be at most %s capacity, %d cores and %d MiB of memory",
			what, units(maxPoolQuantity), maxPoolCores, int64(maxPoolMemoryMiB)))
	}
	return nil
}

func (f *FSM) applySetCaps(t *tx, req *SetCapsRequest) (any, error) {
	c := req.Caps
	if err := ValidateClusterCaps(&c); err != nil {
		return nil, err
	}
	want := map[string]ledger.PoolCaps{ledger.ClusterScope: c.Caps}
	for name, caps := range c.Groups {
		want[ledger.GroupScope(name)] = caps
	}
	for _, row := range t.CapScopes() {
		if _, ok := want[row.Name]; !ok {
			want[row.Name] = ledger.PoolCaps{} // a group left out loses its caps
		}
	}
	names := slices.Sorted(maps.Keys(want))
	// Every cap is checked before the first write: a refusal changes nothing.
	for _, name := range names {
		if over := usageOver(want[name], t.capScopeUsage(name)); over != "" {
			return nil, fmt.Errorf("%w: %s already holds more than the new %s cap", ErrConflict, scopeTitle(name), over)
		}
	}
	for _, name := range names {
		t.putCapScope(name, want[name], t.capScopeUsage(name), true)
	}
	return nil, nil
}

// usageOver names the cap that used exceeds, or "".
func usageOver(caps ledger.PoolCaps, used ledger.PoolUsage) string {
	switch {
	case caps.MaxCapacity > 0 && used.Capacity > caps.MaxCapacity:
		return "maxCapacity"
	case caps.MaxCores > 0 && used.Cores > caps.MaxCores:
		return "maxCores"
	case caps.MaxMemoryMiB > 0 && used.MemoryMiB > caps.MaxMemoryMiB:
		return "maxMemoryMiB"
	}
	return ""
}

// scopeTitle names a scope in messages: "the cluster", "cap group g".
func scopeTitle(scope string) string {
	if g, ok := ledger.ScopeGroup(scope); ok {
		return "cap group " + g
	}
	return "the cluster"
}

func (t *tx) capScopeUsage(name string) ledger.PoolUsage {
	if row := t.CapScopeRow(name); row != nil {
		return row.Usage
	}
	return ledger.PoolUsage{}
}

// putCapScope writes a scope's row; a scope with neither caps nor usage has
// none, so a cluster that never set caps stores only its usage.
func (t *tx) putCapScope(name string, caps ledger.PoolCaps, used ledger.PoolUsage, capsChanged bool) {
	old := t.CapScopeRow(name)
	if caps == (ledger.PoolCaps{}) && used == (ledger.PoolUsage{}) {
		if old != nil {
			t.delete(tableCaps, old)
		}
		return
	}
	row := &CapScope{Name: name, Caps: caps, Usage: used}
	if old != nil {
		row.ModifyIndex = old.ModifyIndex
	}
	if capsChanged {
		row.ModifyIndex = t.index
	}
	t.insert(tableCaps, row)
}

// moveCapGroup moves a pool's usage from its old cap group to its new one
// when an upsert changes capGroup, refusing a move the new group's caps
// cannot hold (as a pool's own caps refuse a lower cap than its usage).
func (t *tx) moveCapGroup(p *Pool, oldGroup string) error {
	if p.CapGroup == oldGroup || p.Usage == (ledger.PoolUsage{}) {
		return nil
	}
	if p.CapGroup != "" {
		sc := ledger.GroupScope(p.CapGroup)
		row := t.CapScopeRow(sc)
		var caps ledger.PoolCaps
		if row != nil {
			caps = row.Caps
		}
		if over := usageOver(caps, t.capScopeUsage(sc).Plus(p.Usage)); over != "" {
			return fmt.Errorf("%w: pool %s holds more than cap group %s's %s has free", ErrConflict, p.Name, p.CapGroup, over)
		}
	}
	if oldGroup != "" {
		sc := ledger.GroupScope(oldGroup)
		t.setScopeUsage(sc, t.capScopeUsage(sc).Minus(p.Usage))
	}
	if p.CapGroup != "" {
		sc := ledger.GroupScope(p.CapGroup)
		t.setScopeUsage(sc, t.capScopeUsage(sc).Plus(p.Usage))
	}
	return nil
}

// setScopeUsage is the ledger's write of a scope's usage.
func (t *tx) setScopeUsage(name string, used ledger.PoolUsage) {
	var caps ledger.PoolCaps
	if row := t.CapScopeRow(name); row != nil {
		caps = row.Caps
	}
	t.putCapScope(name, caps, used, false)
}

// rebuildScopeUsage recomputes every scope's usage from the pools' after a
// restore: a snapshot from before cap scopes existed has pools' usage but
// no scope rows, and the sum is what the ledger would have kept.
func rebuildScopeUsage(txn *rowstore.Txn) error {
	sums := map[string]ledger.PoolUsage{}
	for _, p := range all[Pool](txn, tablePools, "id") {
		for _, sc := range ledger.ScopesOf(p.CapGroup) {
			sums[sc] = sums[sc].Plus(p.Usage)
		}
	}
	rows := map[string]*CapScope{}
	for _, row := range all[CapScope](txn, tableCaps, "id") {
		rows[row.Name] = row
	}
	names := slices.Collect(maps.Keys(sums))
	for name := range rows {
		if _, ok := sums[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		row := CapScope{Name: name, Usage: sums[name]}
		if old := rows[name]; old != nil {
			row.Caps, row.ModifyIndex = old.Caps, old.ModifyIndex
		}
		var err error
		if row.Caps == (ledger.PoolCaps{}) && row.Usage == (ledger.PoolUsage{}) {
			if rows[name] != nil {
				err = txn.Delete(tableCaps, rows[name])
			}
		} else {
			err = txn.Insert(tableCaps, &row)
		}
		if err != nil {
			return fmt.Errorf("restore: cap scope %s: %w", name, err)
		}
	}
	return nil
}

// ClusterCaps returns what PUT /v1/caps set: the cluster's caps and every
// group with caps.
func (s *State) ClusterCaps() ClusterCaps {
	var out ClusterCaps
	for _, row := range s.CapScopes() {
		if row.Name == ledger.ClusterScope {
			out.Caps = row.Caps
			continue
		}
		if g, ok := ledger.ScopeGroup(row.Name); ok && row.Caps != (ledger.PoolCaps{}) {
			if out.Groups == nil {
				out.Groups = map[string]ledger.PoolCaps{}
			}
			out.Groups[g] = row.Caps
		}
	}
	return out
}

// TightestCaps bounds one job of the pool: per dimension, the lowest
// non-zero cap among the pool's, its cap group's and the cluster's (static
// validation reports a job no cap could ever take).
func (s *State) TightestCaps(p *Pool) ledger.PoolCaps {
	out := p.Caps
	for _, sc := range ledger.ScopesOf(p.CapGroup) {
		row := s.CapScopeRow(sc)
		if row == nil {
			continue
		}
		out.MaxCapacity = tighter(out.MaxCapacity, row.Caps.MaxCapacity)
		out.MaxCores = int(tighter(int64(out.MaxCores), int64(row.Caps.MaxCores)))
		out.MaxMemoryMiB = tighter(out.MaxMemoryMiB, row.Caps.MaxMemoryMiB)
	}
	return out
}

// tighter is the lower of two caps where 0 means none.
func tighter(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
